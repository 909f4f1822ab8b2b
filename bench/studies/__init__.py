"""Accuracy studies on real text: each trains through the registry as the pages do, records every finished run in
`bench/records/`, resumes from those records, and prints the tables `bench.report` writes into docs/results.md."""
