"""Exceptions raised by tqref. Every message names the parameter (or the file and object), the
value and the allowed range, as the CLI's do."""


class TqrefError(Exception):
    """Base class of every tqref error."""


class BadArgument(TqrefError, ValueError):
    """A parameter, array or buffer outside its allowed range (wrong dtype, shape, layout,
    value). The library checked it before touching any memory."""


class BadFile(TqrefError):
    """A golden file or EX2 profile that is unreadable or violates its schema."""
