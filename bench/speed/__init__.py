"""Speed and memory benches: texts/s against the machine's measured ceiling, peak memory, and how far the Train
page's time estimates are from the time runs take. Each prints ratios measured side by side in one run."""
