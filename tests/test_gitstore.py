"""Reading objects from a real repository."""

import threading

import pytest
from helpers import observation
from obsrepo.errors import GitError
from obsrepo.gitstore import Git


def test_blobs_read_by_a_kept_reader_and_streamed_agree_and_a_missing_one_is_a_git_error(repo):
    docs = [observation(f"obs-20260213-102500-000{i}") for i in range(1, 4)]
    repo.add(*docs)
    repo.write("observations/empty.md", b"")
    repo.commit("three documents and an empty file")
    git = Git(str(repo.path))
    shas = [repo.git("rev-parse", f"HEAD:{path}") for path in [d.path for d in docs] + ["observations/empty.md"]]
    shas.append(shas[0])  # the same object twice
    reader = git.blob_reader()
    try:
        at_once = reader.read(shas)
        assert at_once == [data for _, data in git.read_blobs(shas)]
        assert at_once[0].decode() == str(docs[0]) and at_once[3] == b"" and at_once[4] == at_once[0]
        assert reader.read(shas[1:3]) == at_once[1:3]  # request after request, one process
        with pytest.raises(GitError):
            reader.read([shas[0], "0" * 40, shas[1]])
        assert reader.read(shas[::-1]) == at_once[::-1]  # after a failure, no answer is read out of turn
        many = shas * 3000  # more than any pipe holds, both ways
        assert reader.read(many) == at_once * 3000
        failed: list = []  # a missing object before a request larger than the pipe: no deadlock

        def read_past_a_missing_object() -> None:
            try:
                reader.read(["0" * 40] + many)
            except GitError as exc:
                failed.append(exc)

        thread = threading.Thread(target=read_past_a_missing_object, daemon=True)
        thread.start()
        thread.join(timeout=30)
        assert not thread.is_alive() and len(failed) == 1
        assert reader.read(shas[:2]) == at_once[:2]
    finally:
        reader.close()


def test_a_replace_ref_never_changes_what_an_object_id_reads(repo):
    """`git replace` makes git show other content for an object id; obsrepo reads objects as stored."""
    doc = observation("obs-20260213-102500-0001")
    repo.add(doc)
    repo.commit("one")
    blob = repo.git("rev-parse", f"HEAD:{doc.path}")
    forged = repo.git("hash-object", "-w", "--stdin", input=str(doc).replace("obs-20260213", "obs-20990101"))
    repo.git("replace", blob, forged)
    assert repo.git("cat-file", "blob", blob) != str(doc)  # git itself now reads the forgery
    git = Git(str(repo.path))
    reader = git.blob_reader()
    assert reader.read([blob])[0].decode() == str(doc)
    reader.close()
    assert [data for _, data in git.read_blobs([blob])][0].decode() == str(doc)
    assert git.run("cat-file", "blob", blob).decode() == str(doc)


def test_a_file_is_replaced_along_its_path_only_when_it_holds_the_expected_blob(repo):
    doc = observation("obs-20260213-102500-0001")
    repo.add(doc)
    repo.write("comprehension/comp-x.md", "version 1\n")
    repo.write("comprehension/comp-y.md", "other\n")
    repo.git("add", "-A")
    repo.git("update-index", "--chmod=+x", "comprehension/comp-x.md")
    repo.git("commit", "-q", "-m", "base")
    git = Git(str(repo.path))
    old = repo.git("rev-parse", "HEAD:comprehension/comp-x.md")
    new = git.write_blob(b"version 2\n")
    tree = git.tree_with_file(repo.sha(), "comprehension/comp-x.md", new, replace=old)
    before = repo.git("ls-tree", "-r", "HEAD").splitlines()
    after = repo.git("ls-tree", "-r", tree).splitlines()
    assert [line for line in after if line not in before] == [f"100755 blob {new}\tcomprehension/comp-x.md"]
    assert len(after) == len(before)
    for path, expected in (("comprehension/comp-x.md", new), ("comprehension/comp-z.md", old), (doc.path, old)):
        assert git.tree_with_file(repo.sha(), path, new, replace=expected) is None  # not that blob, or no file
    assert git.tree_with_file(repo.sha(), "comprehension/comp-x.md", new) is None  # adding never replaces
