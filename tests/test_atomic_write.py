"""`write_text_atomically`: whole or not at all, a previous file kept, no
temporary file left, the caller's error class or the file system's own error."""

import pytest
import tensorflow as tf

from electra_tf.atomic_write import write_text_atomically
from electra_tf.errors import ElectraError


class _WriteError(ElectraError):
    pass


def _fail(*args, **kwargs):
    raise tf.errors.ResourceExhaustedError(None, None, "disk full")


def test_writes_the_text_creating_the_folder_and_leaves_nothing_else(tmp_path):
    path = tmp_path / "a" / "b" / "out.txt"
    assert write_text_atomically(path, "caf\u00e9\n") == str(path)
    assert path.read_text(encoding="utf-8") == "caf\u00e9\n"
    assert write_text_atomically(str(path), "second\n") == str(path)
    assert path.read_text() == "second\n"
    assert [p.name for p in path.parent.iterdir()] == ["out.txt"]


def test_a_gfile_file_system_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where a wrongly local write would land
    path = "ram://atomic_write_test/folder/out.json"
    write_text_atomically(path, "{}\n")
    with tf.io.gfile.GFile(path) as f:
        assert f.read() == "{}\n"
    assert tf.io.gfile.listdir("ram://atomic_write_test/folder") == ["out.json"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("error", [None, _WriteError])
def test_a_failed_write_keeps_the_previous_file_and_no_temporary(
    tmp_path, monkeypatch, error
):
    path = tmp_path / "out.txt"
    path.write_text("previous\n")
    monkeypatch.setattr(tf.io.gfile, "rename", _fail)
    expected = error or tf.errors.ResourceExhaustedError
    with pytest.raises(expected) as raised:
        write_text_atomically(path, "new\n", error)
    if error:
        assert str(raised.value) == f"cannot write {path}: disk full"
        assert isinstance(raised.value.__cause__, tf.errors.ResourceExhaustedError)
    assert path.read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_an_interrupt_is_not_turned_into_the_callers_error(tmp_path, monkeypatch):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(tf.io.gfile, "rename", interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_text_atomically(tmp_path / "out.txt", "text", _WriteError)
    assert list(tmp_path.iterdir()) == []


def test_without_create_folder_a_missing_folder_is_the_callers_error(tmp_path):
    path = tmp_path / "misspelt" / "out.txt"
    with pytest.raises(_WriteError, match=f"cannot write {path}: "):
        write_text_atomically(path, "text", _WriteError, create_folder=False)
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_is_a_file_is_the_callers_error(tmp_path):
    (tmp_path / "afile").write_text("mine")
    with pytest.raises(_WriteError, match="cannot write .*afile/x"):
        write_text_atomically(tmp_path / "afile" / "x", "text", _WriteError)
    assert (tmp_path / "afile").read_text() == "mine"


@pytest.mark.parametrize("error", [None, _WriteError])
def test_an_error_names_the_target_not_the_temporary_file(tmp_path, error):
    """The user named `path`; the file system failed on the hidden temporary
    beside it (was: `cannot write .../no/x: .../no/.tmp-123-x; No such file
    or directory`)."""
    path = tmp_path / "no" / "x.tsv"
    with pytest.raises(Exception) as raised:
        write_text_atomically(path, "text", error, create_folder=False)
    message = str(raised.value)
    assert ".tmp-" not in message, message
    assert str(path) in message
    if error is None:
        assert isinstance(raised.value, (OSError, tf.errors.OpError))
    else:
        assert isinstance(raised.value, _WriteError)
        assert message.startswith(f"cannot write {path}: ")
