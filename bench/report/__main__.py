"""`python -m bench.report`: writes docs/results.md and the README's results block from the records."""

from bench.report.page import main

raise SystemExit(main())
