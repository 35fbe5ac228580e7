"""pytest plugin: golden cases as test parameters.

Load it with `pytest -p tqref.pytest_plugin`, or `pytest_plugins = ["tqref.pytest_plugin"]` in a
conftest.py. Options:
  --tqref-suite S[,S...]  smoke | standard | real | models | PATH.h5 (default smoke), found by the
                          data-directory policy (tqref.find_suite)
  --tqref-format F[,F]    only these formats            --tqref-hdim H   only decoders of HDIM H
  --tqref-case SUBSTR     only cases whose name contains SUBSTR
  --tqref-device DEV      the value of the tqref_device fixture (default "cpu")
Fixtures: tqref_case (every selected case), tqref_writer_case and tqref_decode_case (only that
kind), tqref_device. Each test id names the suite, the case, whose name spells its
parameters (format, head_dim, kv heads, GQA ratio, block size, lengths, window, layout,
distribution), and the decoder build's HDIM, e.g.
`smoke:0002_decode_turbo2v_d128_kv2_gqa4_bs16_L0-1-5-37_win0_..._adversarial_skip:hdim128`.

A five-line engine test (docs/python.md):
    import tqref.testing
    from my_engine import paged_decode_turbo3v
    pytest_plugins = ["tqref.pytest_plugin"]
    def test_decoder(tqref_decode_case, tqref_device):
        tqref.testing.check_case(tqref_decode_case, paged_decode_turbo3v, "T", tqref_device).assert_pass()
"""
import pytest

from . import golden
from .formats import FORMATS

_FIXTURES = {"tqref_case": None, "tqref_writer_case": "writer", "tqref_decode_case": "decode"}


def pytest_addoption(parser):
    g = parser.getgroup("tqref", "golden cases of tqref (docs/python.md)")
    g.addoption("--tqref-suite", default="smoke",
                help="golden suites: smoke, standard, real, models or PATH.h5, comma-separated")
    g.addoption("--tqref-format", default=None,
                help="formats to keep, comma-separated: " + ",".join(f.name for f in FORMATS))
    g.addoption("--tqref-hdim", default=None, type=int, help="decode cases of this HDIM only")
    g.addoption("--tqref-case", default=None, help="cases whose name contains this")
    g.addoption("--tqref-device", default="cpu", help="tqref_device fixture: a torch device or numpy")


class CaseRef:
    """A case by file and name; read when a test uses it (collection reads only the index)."""

    def __init__(self, path, suite, info):
        self.path, self.suite, self.info = path, suite, info

    @property
    def id(self):
        hdim = f":hdim{self.info['hdim']}" if self.info["kind"] == "decode" else ""
        return f"{self.suite}:{self.info['name']}{hdim}"


def _refs(config, kind):
    opt = config.getoption
    formats = opt("--tqref-format").split(",") if opt("--tqref-format") else None
    refs = []
    for suite in opt("--tqref-suite").split(","):
        try:
            path = golden.find_suite(suite)
        except FileNotFoundError as e:
            raise pytest.UsageError(f"--tqref-suite: {e}") from None
        with golden.GoldenFile(path) as f:
            for info in f.cases_info:
                if kind and info["kind"] != kind:
                    continue
                if formats and info["format"] not in formats:
                    continue
                if opt("--tqref-hdim") and info["kind"] == "decode" and info["hdim"] != opt("--tqref-hdim"):
                    continue
                if opt("--tqref-case") and opt("--tqref-case") not in info["name"]:
                    continue
                refs.append(CaseRef(path, suite, info))
    return refs


def pytest_generate_tests(metafunc):
    for name, kind in _FIXTURES.items():
        if name in metafunc.fixturenames:
            refs = _refs(metafunc.config, kind)
            if not refs:  # say so rather than collect nothing
                raise pytest.UsageError(f"{metafunc.function.__name__}: no {kind or ''} case of "
                                        f"--tqref-suite {metafunc.config.getoption('--tqref-suite')} "
                                        f"matches the --tqref-* filters")
            metafunc.parametrize(name, refs, ids=[r.id for r in refs], indirect=True)


def _load(request):
    ref = request.param
    with golden.GoldenFile(ref.path) as f:
        return f.case(ref.info["name"])


@pytest.fixture
def tqref_case(request):
    return _load(request)


@pytest.fixture
def tqref_writer_case(request):
    return _load(request)


@pytest.fixture
def tqref_decode_case(request):
    return _load(request)


@pytest.fixture
def tqref_device(request):
    return request.config.getoption("--tqref-device")
