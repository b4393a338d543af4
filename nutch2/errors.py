"""Errors a user can cause. The CLI prints their message as one line and exits non-zero."""


class NutchError(Exception):
    """Base of user-facing errors: the message names the cause and what to do."""


class ConfigError(NutchError):
    """A bad property value, conf file or command-line option."""


class StoreError(NutchError):
    """The store cannot be opened, read or written."""


class StoreLockedError(StoreError):
    """Another job that rewrites the table holds the crawl's lock."""


class UsageError(NutchError):
    """Wrong command-line use; the message is the whole line to print (exit code 2)."""
