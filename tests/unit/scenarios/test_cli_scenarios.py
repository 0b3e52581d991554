"""`brownout scenarios [show NAME]` and `brownout run FILE --validate`, through the CLI
without a cluster."""

from pathlib import Path

from typer.testing import CliRunner

from brownout.cli import app
from brownout.scenarios import builtin, builtin_names


def test_list_and_show():
    listing = CliRunner().invoke(app, ["scenarios"], env={"COLUMNS": "200"})
    assert listing.exit_code == 0
    assert all(name in listing.output for name in builtin_names())
    shown = CliRunner().invoke(app, ["scenarios", "show", "minority-outage"])
    assert shown.exit_code == 0
    assert shown.output == Path(builtin("minority-outage").source).read_text()
    unknown = CliRunner().invoke(app, ["scenarios", "show", "minority-outag"])
    assert unknown.exit_code == 2 and "did you mean" in unknown.output.lower()


def test_a_piped_listing_keeps_whole_descriptions():
    from brownout.scenarios import builtin_dir
    from brownout.scenarios.catalog import entries

    listing = CliRunner().invoke(app, ["scenarios"], env={"COLUMNS": "80"})
    assert listing.exit_code == 0
    lines = listing.output.splitlines()
    for entry in entries(builtin_dir()):
        line = next(line for line in lines if line.startswith(entry.name + " "))
        assert line.endswith(entry.summary), line


def test_validate_checks_without_running(tmp_path):
    good = CliRunner().invoke(app, ["run", "minority-outage", "--validate"],
                              env={"COLUMNS": "200"})
    assert good.exit_code == 0, good.output
    assert "valid scenario minority-outage" in good.output
    assert "expect acked_writes_lost[acks-all]: == 0" in good.output
    assert not (tmp_path / "runs").exists()
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nduration: 10s\nschedule:\n  - {at: 1s, kill: nobody}\n")
    result = CliRunner().invoke(app, ["run", str(bad), "--validate"])
    assert result.exit_code == 2 and "bad.yaml:4" in result.output
