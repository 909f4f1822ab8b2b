"""The GPU check (`make gpu-check`): what a lent GPU machine runs in one command, the kit it carries there
(`make gpu-wheels`), and the GPU's speed figures. `check.py --cpu` is the same check end to end on a CPU."""
