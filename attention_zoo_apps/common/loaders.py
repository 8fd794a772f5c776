"""Line-oriented file loading with errors that name the file and line.

Every error raised while reading is a `ValueError` whose message starts with
`path:line:` (1-based), the form editors and terminals turn into links.
Files whose name ends in `.gz` are decompressed on the fly (a file that is
not gzip, or ends early, is such an error too). Lines are decoded one by one,
so the encoding must keep `\\n` a single byte (UTF-8, Latin-1, ASCII;
others are refused up front); a UTF-8 byte-order mark on the first line is
dropped, and a UTF-16 or UTF-32 one is named in the error. A path that
cannot be opened is Python's `OSError` naming it (`FileNotFoundError`, a
loop of symbolic links, `PermissionError`, `IsADirectoryError`).

A path that is not a regular file (a FIFO such as `<(zcat x.gz)`,
`/dev/stdin`) can be read only once, while loaders often read a file
twice (its first line to detect a format or a header, then all of it):
inside `read_once(path)`, and for the rest of the process after
`keep_stream(path)` (a command's `--data`), its bytes are read once and
every read of `path` gets them again.
"""

import codecs
import contextlib
import errno
import gzip
import io
import json
import os
import stat
import zlib

# Byte-order marks of encodings whose newline is not the byte `\n` (the
# UTF-32 ones first: UTF-32-LE's starts with UTF-16-LE's).
_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


# The paths whose bytes are read once, if they are not regular files
# (`read_once`, `keep_stream`) -> their bytes (None until read).
_KEPT = {}


def line_error(path, line_number, message):
    """A `ValueError` reading `path:line_number: message`."""
    return ValueError(f"{os.fspath(path)}:{line_number}: {message}")


def iter_lines(path, encoding="utf-8", skip_blank=True):
    """Yields `(line_number, text)` for each line, without its newline.

    Args:
        path: str or path-like; `.gz` files are decompressed.
        encoding: str, the text encoding; its newline must be the one byte
            `\\n` (not UTF-16 or UTF-32). Defaults to `"utf-8"`.
        skip_blank: bool, skip lines that are empty or only whitespace.
            Defaults to `True`.

    Raises:
        ValueError: `path:line: ...` for a line that does not decode or a
            gzip file that is corrupt or cut short; for an `encoding`
            whose newline is not one byte.
        OSError: for a path that cannot be opened, naming it.
    """
    try:
        wide = "\n".encode(encoding) != b"\n"
    except LookupError:
        wide = True
    if wide:
        raise ValueError(
            "`encoding` must be known to Python and write a newline as the "
            "one byte '\\n' (UTF-8, Latin-1, ASCII; re-save UTF-16 or UTF-32 "
            f"files as UTF-8). Received: encoding={encoding!r}"
        )
    path = os.fspath(path)
    gzipped = path.endswith(".gz")
    line_number = 0
    with open_bytes(path) as stream:
        f = gzip.GzipFile(fileobj=stream, mode="rb") if gzipped else stream
        lines = enumerate(f, 1)
        while True:
            try:
                line_number, raw = next(lines)
            except StopIteration:
                return
            except (OSError, EOFError, zlib.error) as error:
                kind = "the gzip file" if gzipped else "the file"
                raise line_error(
                    path, line_number + 1, f"cannot read {kind}: {error}"
                ) from None
            yield from _decoded(path, line_number, raw, encoding, skip_blank)


@contextlib.contextmanager
def read_once(path):
    """Inside the body, every read of `path` (`iter_lines`, `open_bytes`)
    gets the bytes its first read got, when it is not a regular file (a
    FIFO, which gives its bytes once); a regular file is read as usual.
    """
    path = os.fspath(path)
    added = path not in _KEPT
    if added:
        _KEPT[path] = None
    try:
        yield
    finally:
        if added:
            _KEPT.pop(path, None)


def keep_stream(path):
    """`read_once(path)` for the rest of the process: for a command's
    own input (`--data`), which it may read more than once."""
    _KEPT.setdefault(os.fspath(path), None)


def open_bytes(path):
    """`path` opened for reading bytes: a regular file as itself; another
    readable path (a FIFO, a character device) as its bytes, read once
    and kept for the next reads where `read_once` or `keep_stream` says
    so (else as the stream it is).

    Raises:
        OSError: naming `path`: missing, a loop of symbolic links, no
            permission, a folder (`IsADirectoryError`).
    """
    path = os.fspath(path)
    status = os.stat(path)
    if stat.S_ISDIR(status.st_mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
    if stat.S_ISREG(status.st_mode) or path not in _KEPT:
        return open(path, "rb")
    if _KEPT[path] is None:
        with open(path, "rb") as f:
            _KEPT[path] = f.read()
    return io.BytesIO(_KEPT[path])


def _decoded(path, line_number, raw, encoding, skip_blank):
    """Yields `(line_number, text)` of one raw line, unless skipped."""
    if line_number == 1:
        for bom, name in _WIDE_BOMS:
            if raw.startswith(bom):
                # Even Latin-1 would decode it, into every other char NUL.
                raise line_error(
                    path,
                    1,
                    f"cannot decode as {encoding}: the file starts with a "
                    f"{name} byte-order mark (re-save it as UTF-8)",
                )
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as error:
        raise line_error(
            path, line_number, f"cannot decode as {encoding}: {error}"
        ) from None
    text = text.rstrip("\r\n")
    if line_number == 1:
        text = text.lstrip("\ufeff")
    if skip_blank and not text.strip():
        return
    yield line_number, text


def read_tsv(
    path,
    columns,
    encoding="utf-8",
    max_rows=None,
    allow_empty=False,
    delimiter="\t",
):
    """Reads chosen columns of a delimited file as tuples of str.

    Args:
        path: str or path-like (`.gz` allowed).
        columns: sequence of int, the 0-based columns to return, in order.
            Extra columns of the file are ignored.
        encoding: str. Defaults to `"utf-8"`.
        max_rows: int or None, stop after this many rows. Defaults to
            `None`.
        allow_empty: bool, accept fields that are empty after stripping
            whitespace. Defaults to `False`.
        delimiter: str. Defaults to a tab.

    Returns:
        A list of tuples, one per non-blank line, fields stripped.

    Raises:
        ValueError: `path:line: ...` for a line with too few columns or an
            empty field.
    """
    columns = list(columns)
    needed = max(columns) + 1
    rows = []
    for line_number, text in iter_lines(path, encoding):
        if max_rows is not None and len(rows) >= max_rows:
            break
        fields = text.split(delimiter)
        if len(fields) < needed:
            raise line_error(
                path,
                line_number,
                f"expected at least {needed} {delimiter!r}-separated "
                f"columns, found {len(fields)}: {text[:80]!r}",
            )
        row = tuple(fields[c].strip() for c in columns)
        if not allow_empty:
            for column, value in zip(columns, row):
                if not value:
                    raise line_error(
                        path, line_number, f"column {column} is empty"
                    )
        rows.append(row)
    return rows


def read_jsonl(path, keys, encoding="utf-8", max_rows=None):
    """Reads chosen string fields of a JSON-lines file as tuples of str.

    Args:
        path: str or path-like (`.gz` allowed); one JSON object a line.
        keys: sequence of str, the fields to return, in order.
        encoding: str. Defaults to `"utf-8"`.
        max_rows: int or None, stop after this many rows.

    Returns:
        A list of tuples, one per non-blank line, fields stripped.

    Raises:
        ValueError: `path:line: ...` for invalid JSON, a line that is not an
            object, a missing key, or a value that is not a non-empty string.
    """
    rows = []
    for line_number, text in iter_lines(path, encoding):
        if max_rows is not None and len(rows) >= max_rows:
            break
        rows.append(parse_jsonl_line(path, line_number, text, keys))
    return rows


def parse_jsonl_line(path, line_number, text, keys):
    """The string fields `keys` of one JSON line, as a tuple of str.

    Raises:
        ValueError: `path:line: ...` for invalid JSON, a line that is not an
            object, a missing key, or a value that is not a non-empty string.
    """
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise line_error(path, line_number, f"invalid JSON: {error}")
    if not isinstance(record, dict):
        raise line_error(
            path,
            line_number,
            f"expected a JSON object, found {type(record).__name__}",
        )
    row = []
    for key in keys:
        if key not in record:
            raise line_error(
                path,
                line_number,
                f"missing key {key!r} (keys: {sorted(record)})",
            )
        value = record[key]
        if not isinstance(value, str) or not value.strip():
            raise line_error(
                path,
                line_number,
                f"key {key!r} must be a non-empty string, found {value!r}",
            )
        row.append(value.strip())
    return tuple(row)
