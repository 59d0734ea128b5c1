"""The READMEs' Python examples run as written, and the installed wheel is the one they describe.

The top-level README's `python -c '...'` line and every ```python block of
crates/artdb-py/README.md are run, unchanged, by the interpreter the wheel is installed in, each
in a fresh directory (they create their database files in the current directory). An example
that drifts from the API fails here rather than for the first user who pastes it.
"""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import artdb
from artdb import _artdb

PACKAGE = Path(__file__).resolve().parents[1]
REPOSITORY = PACKAGE.parents[1]


def code_blocks(readme, language):
    text = readme.read_text(encoding="utf-8")
    return re.findall(r"^```" + language + r"\n(.*?)^```", text, re.M | re.S)


def run_python(args, cwd):
    result = subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, f"{args}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result.stdout


def test_the_top_level_readme_one_liner_runs(tmp_path):
    commands = [
        line
        for block in code_blocks(REPOSITORY / "README.md", "sh")
        for line in block.splitlines()
        if line.startswith("python -c ")
    ]
    assert len(commands) == 1, commands
    words = shlex.split(commands[0])
    assert words[:2] == ["python", "-c"], words
    assert run_python(words[1:], tmp_path) == "{b'k': b'v'}\n"
    assert (tmp_path / "try.artdb").exists()


def test_the_package_readme_examples_run(tmp_path):
    blocks = code_blocks(PACKAGE / "README.md", "python")
    assert blocks, "crates/artdb-py/README.md has no python example"
    for number, block in enumerate(blocks):
        directory = tmp_path / f"example-{number}"
        directory.mkdir()
        script = directory / "example.py"
        script.write_text(block, encoding="utf-8")
        out = run_python([str(script)], directory)
        assert out, f"example {number} printed nothing"
    # The first example's shop: what its statements leave behind, read back.
    with artdb.open(tmp_path / "example-0" / "shop.artdb", read_only=True) as db:
        orders = db.table("orders")
        keys = [artdb.keys.unpack(key) for key in orders]
    assert keys == [("alice", 1), ("alice", 2), ("dave", 1)], keys


def elf_section_names(data):
    """The section names of a 64-bit little-endian ELF file (the extension module on Linux)."""
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "not a 64-bit LE ELF"
    section_headers = int.from_bytes(data[0x28:0x30], "little")
    entry_size = int.from_bytes(data[0x3A:0x3C], "little")
    count = int.from_bytes(data[0x3C:0x3E], "little")
    names_index = int.from_bytes(data[0x3E:0x40], "little")

    def header(index):
        at = section_headers + index * entry_size
        name = int.from_bytes(data[at : at + 4], "little")
        offset = int.from_bytes(data[at + 0x18 : at + 0x20], "little")
        return name, offset

    _, names_offset = header(names_index)
    names = []
    for index in range(count):
        name, _ = header(index)
        start = names_offset + name
        names.append(data[start : data.index(b"\x00", start)].decode("ascii"))
    return names


def test_the_wheels_extension_module_is_stripped():
    """Symptom: the wheel's .so was 15.8 MB, almost all of it the line tables the workspace's
    release profile keeps for profiling. Fixed by `strip = true` in pyproject.toml."""
    if not sys.platform.startswith("linux"):
        pytest.skip("reads ELF section headers: Linux only")
    module = Path(_artdb.__file__)
    data = module.read_bytes()
    names = elf_section_names(data)
    assert ".text" in names, names
    debug = [name for name in names if name.startswith(".debug")]
    assert not debug, f"{module} keeps {debug}"
    assert ".symtab" not in names, f"{module} keeps its symbol table"
