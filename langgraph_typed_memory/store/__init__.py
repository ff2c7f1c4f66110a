"""The memory store: LangGraph's `BaseStore` with typed, scoped, governed memory.

Rooms, by role:

- `core/`: what every backend shares. `base` (the store classes' public surface), `engine`
  (a batch of operations, dispatched), `records` (the record operations every plan builds
  on), `ops` (the store's own operations and the validation of every operation), `search`,
  `promote` (the gate's decisions written), `access` (retrieval counts), `queries` (shared
  SQL), `protocol` (plans as generators of requests, and their sync and async drivers),
  `retry`.
- `index/`: the search caches kept in this process: per scope cell (`cells`, kept valid by
  the counters of `scopes`), vector matrices (`vectors`), full-text postings (`postings`,
  filled from SQLite's tokens by `fts5` and from Postgres' by `tsvector`) and the one
  lexical ranking over them (`bm25`). The rest of the store imports the room's package only.
- `sqlite/` and `postgres/`: each backend's store classes (`store`) and its dialect and
  migrations (`dialect`).
- `governance/`: the lifecycle sweeps, erasure, export and import (`portability`, with the
  file encryption of `envelope`), and the invariant checker.
"""
