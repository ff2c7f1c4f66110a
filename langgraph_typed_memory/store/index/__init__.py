"""The search caches kept in this process, per scope cell: vector matrices and full-text
postings, brought up to date from the database's counters, and the one lexical ranking."""
