import sys

from core.environment import prepare

prepare()  # before the CLI imports torch
from core.cli import main  # noqa: E402

sys.exit(main())
