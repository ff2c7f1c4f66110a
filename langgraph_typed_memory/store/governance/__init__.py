"""Governance of stored memory: lifecycle sweeps, erasure, encrypted export and import, and
the invariant checker."""
