"""The one error type for bad user input: the CLI maps it to exit code 2, pages to a message."""


class InputError(ValueError):
    """Bad data, arguments or paths; the message says what is wrong and how to fix it."""
