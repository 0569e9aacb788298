"""Plausible bugs in where data files live and how a missing one is fetched (``flprivacy.data.files``):
the data directory's resolution, the checksum check (its case, its cache, what a failed one
leaves), the order of mirrors, the offline switch and the registry's checksums, beyond
``mirror_no_connect_check`` in ``reliability.py``.

Run in a private clone (it edits files in place), with ``FLPRIVACY_DATA_DIR`` at the shared data:

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/data_files.py
"""

from tools.mutation import Mutant, pytest_command

FI = "src/flprivacy/data/files.py"

TESTS = pytest_command("tests/test_data.py", "tests/test_reliability.py", "-k", "data or fetch or mirror or acs or checksum or file")

MUTANTS = [
    Mutant("data_dir_project_root_only", FI, "candidates = [p] if p.is_absolute() else [Path.cwd() / p] + (",
           "candidates = [p] if p.is_absolute() else [] + (", "a relative path is read from the current directory first"),
    Mutant("data_dir_missing_falls_back", FI, "                return c.resolve()\n        raise DataNotFoundError(",
           "                return c.resolve()\n        return Path(env)\n        raise DataNotFoundError(",
           "a data directory that does not exist is an error, not a silent default"),
    Mutant("checksum_case_sensitive", FI, "if got != expected.lower():", "if got != expected:", "hex digests in either case"),
    Mutant("checksum_skipped", FI, "    if not checksum:\n        return\n    algo", "    if checksum:\n        return\n    algo",
           "a registered checksum is checked"),
    Mutant("verified_cache_ignores_mtime", FI, "if _VERIFIED.get((path, file.checksum)) != mtime:",
           "if (path, file.checksum) not in _VERIFIED:", "a file replaced since its check is checked again"),
    Mutant("replace_before_verify", FI, "            try:\n                verify(Path(tmp), checksum)",
           "            os.replace(tmp, dest)\n            tmp = str(dest)\n            try:\n                verify(Path(tmp), checksum)",
           "a download that fails its checksum leaves nothing behind"),
    Mutant("checksum_error_swallowed", FI, "            except ChecksumError:\n                raise\n",
           "            except ChecksumError as e:\n                errors.append(f\"{url}: {e}\")\n                continue\n",
           "a wrong checksum raises ChecksumError, not 'not found'"),
    Mutant("dead_mirror_stops", FI, 'errors.append(f"{url}: host unreachable within {CONNECT_TIMEOUT:g} s")\n                continue',
           'errors.append(f"{url}: host unreachable within {CONNECT_TIMEOUT:g} s")\n                break',
           "a dead mirror is skipped for the next one"),
    Mutant("offline_ignored", FI, 'allow_download = config.env(OFFLINE_ENV, "0").lower() not in ("1", "true", "yes")',
           "allow_download = True", "FLPRIVACY_OFFLINE=1: no download attempt"),
    Mutant("medical_checksum_wrong", FI, "sha256:505c1cbc2e63d0363bac59501563df2530aadf4cdb9cfee226f4ef32f5468281",
           "sha256:505c1cbc2e63d0363bac59501563df2530aadf4cdb9cfee226f4ef32f5468282", "the registry's checksum of Medical"),
    Mutant("data_paths_not_hidden", FI, 'return text.replace(str(data_dir()), f"${DATA_ENV}")', "return text",
           "the book's pages show $FLPRIVACY_DATA_DIR, not the build machine's folders"),
]
