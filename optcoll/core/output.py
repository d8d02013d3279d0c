"""Writing output files safely: never over an input, never over a file without ``force``,
never half-written.

Every file optcoll writes goes through :func:`write_output`: the bytes go to a file with
no name yet in the target's folder (Linux ``O_TMPFILE``; elsewhere a hidden temporary
file), which becomes the target only once complete. An interrupted run leaves the old
file, or none, never a truncated one; on Linux a killed run leaves no temporary file
either.

A command that writes several files does so inside :func:`output_transaction`: every file
is written in full under a hidden temporary name first, and all take their names only
once every one is complete, so a failure (a full disk at the second file) leaves none of
them behind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from optcoll.exceptions import ArgumentError, OutputError, OutputExistsError, shown

__all__ = [
    "write_output",
    "output_transaction",
    "check_output",
    "require_suffix",
    "input_files",
    "exists",
]


#: The files staged by the innermost :func:`output_transaction`: (temporary, target, force).
_STAGED: ContextVar[list[tuple[Path, Path, bool]] | None] = ContextVar("staged", default=None)
#: Folders the transaction's writes created, removed again (if empty) when it fails.
_FOLDERS: ContextVar[list[Path] | None] = ContextVar("folders", default=None)


@contextmanager
def output_transaction() -> Iterator[None]:
    """Stage every :func:`write_output` of the block; publish all files when it ends.

    Each file is written completely under a hidden temporary name beside its target;
    only when the block completes without an error do they take their names (each a
    rename). An error inside the block removes every staged file, and the folders its
    writes created, so a command that fails leaves none of its outputs behind.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> try:
    ...     with output_transaction():
    ...         _ = write_output(folder / "schedule.json", "{}")
    ...         raise OSError("disk full")
    ... except OSError:
    ...     pass
    >>> sorted(p.name for p in folder.iterdir())
    []
    >>> try:
    ...     with output_transaction():
    ...         _ = write_output(folder / "new" / "deeper" / "a.json", "{}")
    ...         raise OSError("disk full")
    ... except OSError:
    ...     pass
    >>> sorted(p.name for p in folder.iterdir())  # no empty folders left either
    []
    >>> with output_transaction():
    ...     _ = write_output(folder / "schedule.json", "{}")
    ...     _ = write_output(folder / "cut.png", b"png")
    >>> sorted(p.name for p in folder.iterdir())
    ['cut.png', 'schedule.json']
    """
    if _STAGED.get() is not None:  # nested: the outer transaction publishes
        yield
        return
    staged: list[tuple[Path, Path, bool]] = []
    folders: list[Path] = []
    reset = False
    token = _STAGED.set(staged)
    folders_token = _FOLDERS.set(folders)
    published: list[Path] = []
    try:
        yield
        _STAGED.reset(token)
        _FOLDERS.reset(folders_token)
        reset = True
        for temporary, target, force in staged:
            try:
                if force:
                    os.replace(temporary, target)
                else:
                    os.link(temporary, target)  # fails if the target appeared meanwhile
            except FileExistsError:
                raise OutputExistsError(target, appeared=True) from None
            except OSError as err:
                raise OutputError(f"{target}: cannot write ({err.strerror})") from None
            published.append(target)
    except BaseException:
        for target in published:  # only files this transaction created or replaced
            if os.path.lexists(target):
                os.unlink(target)
        for temporary, _, _ in staged:
            if os.path.lexists(temporary):
                os.unlink(temporary)
        for folder in reversed(folders):  # deepest first; only the empty ones go
            try:
                folder.rmdir()
            except OSError:
                pass
        raise
    finally:
        if not reset:
            _STAGED.reset(token)
            _FOLDERS.reset(folders_token)
        for temporary, _, _ in staged:
            if os.path.lexists(temporary):
                os.unlink(temporary)


def check_output(
    path: str | Path, *, force: bool = False, inputs: Iterable[str | Path] = ()
) -> Path:
    """Refuse ``path`` as an output if it is one of ``inputs`` or exists without ``force``.

    Call it before long work so that a refused output costs nothing.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> (folder / "topo.json").write_text("{}")
    2
    >>> check_output(folder / "topo.json", force=True, inputs=[folder / "topo.json"])
    Traceback (most recent call last):
    ...
    optcoll.exceptions.OutputError: ... is an input of this command; choose another output file
    """
    if not isinstance(force, bool):  # force="no" would be true
        raise ArgumentError(f"force must be True or False, got {type(force).__name__}")
    target = _target(path)
    for source in _inputs(inputs):
        source = Path(source)
        if exists(source) and exists(target) and source.samefile(target):
            raise OutputError(f"{target} is an input of this command; choose another output file")
    if exists(target) and target.is_dir():
        raise OutputError(f"{target} is a folder; give a file name")
    if exists(target) and not force:
        raise OutputExistsError(target)
    return target


def write_output(
    path: str | Path,
    data: str | bytes,
    *,
    force: bool = False,
    inputs: Iterable[str | Path] = (),
) -> Path:
    """Write ``data`` to ``path`` atomically (complete before it takes the name).

    Parameters
    ----------
    path
        The file to write; its folder is created if missing.
    data
        Text (written as UTF-8) or bytes.
    force
        Overwrite an existing file (never one of ``inputs``).
    inputs
        Files the command read: writing over any of them is refused.

    Returns
    -------
    Path
        The written path.

    Raises
    ------
    OutputError
        The target exists (without ``force``), is an input, or cannot be written (the
        message names the file and the system's reason).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "out" / "a.txt"
    >>> write_output(target, "hello\\n").read_text()
    'hello\\n'
    >>> write_output(target, "again\\n")
    Traceback (most recent call last):
    ...
    optcoll.exceptions.OutputExistsError: ... exists; pass force=True to overwrite it
    """
    if not isinstance(data, str | bytes):
        raise ArgumentError(f"data must be text or bytes, got {type(data).__name__}")
    target = check_output(path, force=force, inputs=inputs)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    folders = _FOLDERS.get()
    if folders is not None:  # the folders this write creates, outermost first
        missing = [p for p in reversed(target.parents) if not os.path.lexists(p)]
        folders.extend(p for p in missing if p not in folders)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(f"{target}: cannot write ({err.strerror})") from None
    staged = _STAGED.get()
    if staged is not None:
        staged.append((_write_staged(target, payload), target, force))
        return target
    try:
        if not _write_anonymous(target, payload, force):
            _write_named(target, payload, force)
    except FileExistsError:
        raise OutputExistsError(target, appeared=True) from None
    except OSError as err:
        raise OutputError(f"{target}: cannot write ({err.strerror})") from None
    return target


def _write_anonymous(target: Path, payload: bytes, force: bool) -> bool:
    """Write through a file with no name until it is complete (Linux ``O_TMPFILE``).

    A run killed at any moment before the final link leaves nothing behind. False
    when the system or file system has no anonymous files (the caller falls back).
    """
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.isdir("/proc/self/fd"):
        return False
    try:
        handle = os.open(target.parent, flag | os.O_WRONLY, 0o644)
    except OSError:  # EOPNOTSUPP, EISDIR (kernel without it), ...
        return False
    try:
        _write_all(handle, payload)
        os.fchmod(handle, 0o644)
        # linkat(AT_SYMLINK_FOLLOW) through /proc names the anonymous file (os.link takes
        # that path only with a directory handle; plain link() would not follow it)
        descriptors = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
        try:
            if not force:  # fails if the target appeared meanwhile
                os.link(str(handle), target, src_dir_fd=descriptors, follow_symlinks=True)
                return True
            # a name only for the instant between link and rename (no atomic link-over exists)
            name = target.parent / f".{target.name}.{os.getpid()}.{handle}.tmp"
            os.link(str(handle), name, src_dir_fd=descriptors, follow_symlinks=True)
        finally:
            os.close(descriptors)
        try:
            os.replace(name, target)
        finally:
            if os.path.lexists(name):
                os.unlink(name)
        return True
    finally:
        os.close(handle)


def _write_named(target: Path, payload: bytes, force: bool) -> None:
    """Write to a hidden temporary file beside ``target``, then rename it into place."""
    handle, temporary = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
    )
    try:
        try:
            _write_all(handle, payload)
        finally:
            os.close(handle)
        os.chmod(temporary, 0o644)
        if force:
            os.replace(temporary, target)
        else:
            os.link(temporary, target)  # atomic: fails if another writer got there first
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def _write_staged(target: Path, payload: bytes) -> Path:
    """``payload`` in full in a hidden temporary file beside ``target`` (its path)."""
    try:
        handle, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as err:
        raise OutputError(f"{target}: cannot write ({err.strerror})") from None
    temporary = Path(name)
    try:
        try:
            _write_all(handle, payload)
        finally:
            os.close(handle)
        os.chmod(temporary, 0o644)
    except OSError as err:
        os.unlink(temporary)
        raise OutputError(f"{target}: cannot write ({err.strerror})") from None
    return temporary


def _write_all(handle: int, payload: bytes) -> None:
    """Every byte of ``payload`` to the open file ``handle``, flushed to the disk."""
    view = memoryview(payload)
    while view:
        view = view[os.write(handle, view) :]
    os.fsync(handle)


def _target(path: str | Path) -> Path:
    """``path`` as an output file name, or an :class:`OutputError` saying why no file can
    have it (a NUL byte, which the operating system refuses with a ValueError)."""
    if not isinstance(path, str | os.PathLike):
        raise ArgumentError(f"the output path must be a str or pathlib.Path, got {path!r}")
    if "\0" in os.fspath(path):
        raise OutputError(f"{os.fspath(path)!r}: a file name cannot contain a NUL byte")
    return Path(path)


def _inputs(inputs: Iterable[str | Path]) -> list[Path]:
    """``inputs`` as paths, or an :class:`ArgumentError` (a common slip: ``inputs=path``)."""
    if isinstance(inputs, str | os.PathLike) or not isinstance(inputs, Iterable):
        raise ArgumentError(
            f"inputs must be a collection of file paths, got {shown(inputs)} "
            f"({type(inputs).__name__})"
        )
    paths = list(inputs)
    for item in paths:
        if not isinstance(item, str | os.PathLike):
            raise ArgumentError(f"inputs holds {shown(item)}, which is not a file path")
    return [Path(item) for item in paths]


def require_suffix(path: str | Path, suffixes: Iterable[str], what: str) -> Path:
    """Refuse an output ``path`` whose suffix is not one of ``suffixes`` (case-insensitive).

    Call it before any work, so that a typo costs nothing and no file is written
    under a name its content does not match.

    Examples
    --------
    >>> require_suffix("cut.PNG", (".png", ".svg"), "a picture").name
    'cut.PNG'
    >>> require_suffix("cut.jpg", (".png", ".svg"), "a picture")
    Traceback (most recent call last):
    ...
    optcoll.exceptions.OutputError: cut.jpg: a picture is written as .png or .svg; got suffix '.jpg'
    """
    target = Path(path)
    allowed = tuple(suffixes)
    if target.suffix.lower() not in allowed:
        names = ", ".join(allowed[:-1]) + " or " + allowed[-1] if len(allowed) > 1 else allowed[0]
        got = f"suffix {target.suffix!r}" if target.suffix else "no suffix"
        raise OutputError(f"{target}: {what} is written as {names}; got {got}")
    return target


def input_files(*sources: str | Path | None) -> list[Path]:
    """The ``sources`` that name existing files (not built-in specs, not ``None``).

    An output must not be written over any of them.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> topo = pathlib.Path(tempfile.mkdtemp()) / "topo.json"
    >>> _ = topo.write_text("{}")
    >>> input_files(str(topo), "dgx-a100:2", None) == [topo]
    True
    """
    return [Path(s) for s in sources if s is not None and exists(s) and Path(s).is_file()]


def exists(path: str | Path) -> bool:
    """True if ``path`` names something on disk; False also for names no file can have.

    :meth:`pathlib.Path.exists` raises on a name over 255 bytes or with a NUL byte.

    Examples
    --------
    >>> exists("/"), exists("x" * 300), exists("a\\0b")
    (True, False, False)
    """
    try:
        return Path(path).exists()
    except (OSError, ValueError):
        return False
