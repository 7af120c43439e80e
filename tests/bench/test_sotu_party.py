"""bench/tasks/sotu_party.py: the party task is split by address, labelled by
party, and read by the study's classification path; bad input names itself
and leaves an earlier build whole."""

import io
import json
import tarfile

import pytest

from bench.tasks import sotu_party

# Opening sentences of real addresses (US Government works, no copyright).
_TEXTS = {
    ("1913", "Woodrow Wilson", "Democratic"): (
        "Gentlemen of the Congress: In pursuance of my constitutional duty to "
        "give to the Congress information of the state of the Union, I take the "
        "liberty of addressing you on several matters which ought, as it seems "
        "to me, particularly to engage the attention of your honorable bodies. "
        "Thank you."
    ),
    ("1934", "Franklin D Roosevelt", "Democratic"): (
        "I come before you at the opening of the regular session of the 73d "
        "Congress, not to make requests for special or detailed items of "
        "legislation.\tI come, rather, to counsel with you."
    ),
    ("1962", "John F Kennedy", "Democratic"): (
        "It is with a heavy heart that I stand here tonight.\n"
        "This Nation has been through a year of trial and of change."
    ),
    ("1923", "Calvin Coolidge", "Republican"): (
        "Since the close of the last Congress the Nation has lost President "
        "Harding. The world knew his kindness and his humanity."
    ),
    ("1954", "Dwight D Eisenhower", "Republican"): (
        "I am happy to meet with the 83d Congress to report on the state of "
        "the Union. Much for which we may be thankful has happened."
    ),
    ("1982", "Ronald Reagan", "Republican"): (
        "Today marks my first State of the Union address to you, a "
        "constitutional duty as old as our Republic itself. Yes!"
    ),
    ("1842", "John Tyler", "Whig"): (
        "We have continued reason to express our profound gratitude to the "
        "Great Creator of All Things."
    ),
}

_FOLDED = {f"{y} {n} ({p})": " ".join(t.split()) for (y, n, p), t in _TEXTS.items()}


def _package(path, texts=_TEXTS, extra=()):
    with tarfile.open(path, "w:gz") as archive:
        files = [
            (
                f"package/data/{year}_{name.lower().replace(' ', '_')}.json",
                json.dumps(
                    {"year": int(year), "name": name, "party": party, "text": text}
                ).encode(),
            )
            for (year, name, party), text in texts.items()
        ]
        files += [("package/README.md", b"# State of the Union")] + list(extra)
        for name, data in files:
            member = tarfile.TarInfo(name)
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return path


def _build(tmp_path, *flags):
    tmp_path.mkdir(exist_ok=True)
    package = _package(tmp_path / "sotu.tgz")
    output = tmp_path / "party"
    argv = ["--package", str(package), "--output-dir", str(output), *flags]
    return sotu_party.build(sotu_party.parse_args(argv)), output


def _rows(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "sentence\tlabel"
    return [tuple(line.split("\t")) for line in lines[1:]]


def test_addresses_split_whole_by_party_and_labelled_by_it(tmp_path):
    manifest, output = _build(tmp_path)
    placed = [a for s in sotu_party.SPLITS for a in manifest["splits"][s]["addresses"]]
    # Every Democratic and Republican address once; the Whig one nowhere.
    assert sorted(placed) == sorted(
        f"{y} {n} ({p})" for y, n, p in _TEXTS if p != "Whig"
    )
    for split in sotu_party.SPLITS:
        addresses = manifest["splits"][split]["addresses"]
        # 3 addresses a party cut 60/20/20: one of each party in each split.
        assert sum("(Republican)" in a for a in addresses) == 1, split
        rows = _rows(output / f"{split}.tsv")
        assert len(rows) == manifest["splits"][split]["sentences"] > 0
        for sentence, label in rows:
            # The one address the sentence comes from is in this split.
            owners = [a for a, text in _FOLDED.items() if sentence in text]
            assert len(owners) == 1 and owners[0] in addresses, sentence
            assert label == ("1" if "(Republican)" in owners[0] else "0"), sentence


def test_sentences_are_cut_short_ones_dropped_white_space_folded(tmp_path):
    _, output = _build(tmp_path)
    sentences = [
        s for split in sotu_party.SPLITS for s, _ in _rows(output / f"{split}.tsv")
    ]
    assert "I come, rather, to counsel with you." in sentences  # after a tab
    assert "This Nation has been through a year of trial and of change." in sentences
    # Under five words: "Thank you.", "Yes!", "I come ... you." has six.
    assert not any(s in ("Thank you.", "Yes!") for s in sentences)
    assert all("\t" not in s and "\n" not in s for s in sentences)


def test_a_build_is_the_same_every_time_and_samples_in_file_order(tmp_path):
    whole, output = _build(tmp_path)
    rows = _rows(output / "train.tsv")
    again, output_again = _build(tmp_path / "again", "--train-sentences", "2")
    assert again["splits"]["test"] == whole["splits"]["test"]
    sampled = _rows(output_again / "train.tsv")
    assert len(sampled) == 2 and again["splits"]["train"]["of"] == len(rows)
    assert sampled == [r for r in rows if r in sampled]  # order kept


def test_the_study_reads_the_build_as_an_sst2_layout_task(tmp_path):
    import dataclasses

    from electra_tf.finetuning.glue_readers import read_glue_tsv
    from electra_tf.finetuning.glue_tasks import get_task

    _, output = _build(tmp_path)
    task = dataclasses.replace(get_task("sst2"), test_splits=())
    test = read_glue_tsv(task, "test", str(output))
    assert len(test) == len(_rows(output / "test.tsv"))


def test_bad_input_names_the_culprit_and_leaves_the_last_build_whole(tmp_path):
    _, output = _build(tmp_path)
    before = {p.name: p.read_bytes() for p in output.iterdir()}
    package = tmp_path / "sotu.tgz"
    argv = ["--package", str(package), "--output-dir", str(output)]

    with pytest.raises(SystemExit, match="--train-sentences 50 exceeds the"):
        sotu_party.build(sotu_party.parse_args([*argv, "--train-sentences", "50"]))
    missing = tmp_path / "nowhere.tgz"
    with pytest.raises(SystemExit, match=f"cannot read {missing}"):
        sotu_party.build(sotu_party.parse_args(["--package", str(missing), *argv[2:]]))
    (tmp_path / "text.tgz").write_text("not an archive")
    with pytest.raises(SystemExit, match="text.tgz as a .tgz"):
        sotu_party.read_addresses(tmp_path / "text.tgz")
    broken = _package(tmp_path / "broken.tgz", extra=[("package/data/x.json", b"{")])
    with pytest.raises(SystemExit, match="package/data/x.json is not JSON"):
        sotu_party.read_addresses(broken)
    lacking = _package(
        tmp_path / "lacking.tgz", extra=[("package/data/y.json", b'{"year": 1}')]
    )
    with pytest.raises(SystemExit, match="y.json lacks name, party, text"):
        sotu_party.read_addresses(lacking)
    empty = _package(tmp_path / "empty.tgz", texts={})
    with pytest.raises(SystemExit, match="holds no package/data"):
        sotu_party.read_addresses(empty)
    assert {p.name: p.read_bytes() for p in output.iterdir()} == before
