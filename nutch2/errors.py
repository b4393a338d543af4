"""Errors a user can cause. The CLI prints their message as one line and exits non-zero."""


class NutchError(Exception):
    """Base of user-facing errors: the message names the cause and what to do."""


class ConfigError(NutchError):
    """A bad property value, conf file or command-line option."""


class StoreError(NutchError):
    """The store cannot be opened, read or written."""


class StoreUnavailable(StoreError):
    """The store did not answer (down, unreachable, silent) after the client's retries: the same command goes on
    once it answers again."""


class StoreLockedError(StoreError):
    """Another command holds the lease (the crawl's or a batch's) this one needs."""


class LeaseLost(StoreError):
    """This command's lease was taken over: it must not record anything more."""


class WorkerDied(NutchError):
    """A worker process of the job died (killed, out of memory): what it wrote is kept; the job resumes."""


class NothingWritten(NutchError):
    """A command that may create the crawl wrote no row (every seed line rejected): a crawl it created is dropped
    again (nutch2/tools/base.py Tool.execute), so a later command does not find an empty one."""


class UsageError(NutchError):
    """Wrong command-line use; the message is the whole line to print (exit code 2)."""


def raised_in(e: BaseException, package: str) -> bool:
    """Was `e` raised in `package`'s own code (its innermost frame), e.g. a client library that could not read an
    answer it did not expect?"""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and (tb.tb_frame.f_globals.get("__name__", "") + ".").startswith(f"{package}.")


def error_line(tool: str, e: BaseException) -> str:
    """``nutch2 <tool>: error: <message>``, without the tool's name twice when the message starts with it."""
    return f"nutch2 {tool}: error: {str(e).removeprefix(f'{tool}: ')}"
