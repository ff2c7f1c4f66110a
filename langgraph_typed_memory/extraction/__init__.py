"""Extraction: a user's chat turn becomes candidate memories for the promotion gate.

`prefilter` decides cheaply whether a turn is worth extracting from; `extract_rules` is the
offline, deterministic extractor; with a chat model, `with_structured_output(ExtractionResult)`
and `EXTRACTION_PROMPT` do the job and `candidates_from_model_output` checks what it returned.
Pure functions, no I/O. Candidates are proposals the gate verifies and writes.
"""

from langgraph_typed_memory.extraction.candidates import (
    EXTRACTION_PROMPT,
    Candidate,
    ExtractionResult,
    ValidatedCandidates,
    candidates_from_model_output,
)
from langgraph_typed_memory.extraction.rules import extract_rules
from langgraph_typed_memory.extraction.text import FilterDecision, FilterReason, prefilter

__all__ = [
    "Candidate", "ExtractionResult", "EXTRACTION_PROMPT", "FilterDecision", "FilterReason",
    "prefilter", "extract_rules", "ValidatedCandidates", "candidates_from_model_output",
]
