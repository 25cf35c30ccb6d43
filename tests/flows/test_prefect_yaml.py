"""prefect.yaml names real flows, each deployment with its flow's parameters, each flow its job's options."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from prefect.client.schemas.actions import DeploymentScheduleCreate
from prefect.client.schemas.schedules import CronSchedule

from flows.apply.options import ApplyOptions
from flows.archive.options import ArchiveOptions
from flows.backup.options import BackupOptions
from flows.check.options import CheckOptions
from flows.migrate.options import MigrateOptions
from flows.options import MIB, ServiceOptions, flow_fields, options_from_params, params
from flows.setup.options import DRIFT_FIELDS, PLAN_FIELDS, UP_FIELDS, SetupOptions

ROOT = Path(__file__).resolve().parents[2]

#: Per deployment, the parameters whose value in prefect.yaml is an example of a site's own (paths, files).
SITE_VALUES = {
    "migrate": {"inventory", "ledger", "report_dir"},
    "apply-nightly": {"ops", "ledger", "report_dir"},
    "archive-nightly": {"to", "project", "tags", "ledger", "report_dir"},
    "backup-nightly": {"project", "to", "ledger", "report_dir"},
    "setup-drift-nightly": {"file", "ledger"},
    "check": {"inventory", "ledger", "report_dir"},
}
#: Flow parameters that are connection settings (ServiceOptions), not MigrateOptions (the token is never one).
SETTINGS_PARAMS = {"api_url", "upload_url"}


#: Each deployment of prefect.yaml and the name of the flow its entrypoint names.
FLOWS = {
    "migrate": "videoferry-migrate",
    "apply-nightly": "videoferry-apply",
    "archive-nightly": "videoferry-archive",
    "backup-nightly": "videoferry-backup",
    "setup-drift-nightly": "videoferry-setup-drift",
    "check": "videoferry-check",
}
#: The nightly deployments' schedules, as prefect.yaml must write them.
SCHEDULES = {
    "apply-nightly": {"cron": "0 2 * * *", "timezone": "UTC", "active": True},
    "archive-nightly": {"cron": "30 3 * * *", "timezone": "UTC", "active": True},
    "backup-nightly": {"cron": "30 1 * * *", "timezone": "UTC", "active": True},
    "setup-drift-nightly": {"cron": "0 3 * * *", "timezone": "UTC", "active": True},
}
#: Each deployment's ledger: apply reads key: targets from migrate's; a job of its own keeps its own (a run
#: holds its ledger's lock).
#: Remote ledgers (s3://): a worker's disk may be new for every flow run (docs/remote-ledger.md).
LEDGERS = {
    "migrate": "s3://my-bucket/videoferry/ledger.db",
    "apply-nightly": "s3://my-bucket/videoferry/ledger.db",
    "archive-nightly": "s3://my-archive-bucket/videoferry/archive-ledger.db",
    "backup-nightly": "s3://my-backup-bucket/videoferry/backup-ledger.db",
    "setup-drift-nightly": "s3://my-bucket/videoferry/setup-ledger.db",
    "check": "s3://my-bucket/videoferry/ledger.db",
}


def _deployment(name: str = "migrate") -> tuple[dict[str, Any], dict[str, Any], Any]:
    config = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    (deployment,) = [d for d in config["deployments"] if d["name"] == name]
    path, attribute = deployment["entrypoint"].split(":")
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    return config, deployment, getattr(module, attribute)


def test_deployments_are_the_known_ones() -> None:
    config = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    assert [d["name"] for d in config["deployments"]] == list(FLOWS)
    # The same work pool for both: one worker (with the token in its environment) runs them all.
    assert {(d["work_pool"]["name"], d["work_pool"]["work_queue_name"]) for d in config["deployments"]} == {
        ("videoferry", "default")
    }


@pytest.mark.parametrize("name", list(FLOWS))
def test_deployment_matches_the_flow(name: str) -> None:
    config, deployment, flow = _deployment(name)
    assert flow.name == FLOWS[name]
    params = inspect.signature(flow.fn).parameters
    # Exactly the flow's parameters, in the flow's order: none missing, none the flow would refuse.
    assert list(deployment["parameters"]) == list(params)
    # No token anywhere: only the variable's name and the Secret block's name (job_variables) may say it.
    named = str(config).lower().replace("videoferry_token_block", "").replace("'videoferry-token'", "")
    assert "token" not in named.replace("videoferry_token", "")
    assert not any("token" in name or "secret" in name for name in params)


@pytest.mark.parametrize("name", list(FLOWS))
def test_deployment_values_are_the_flow_defaults(name: str) -> None:
    _config, deployment, flow = _deployment(name)
    params = inspect.signature(flow.fn).parameters
    for param, value in deployment["parameters"].items():
        if param in SITE_VALUES[name]:
            assert isinstance(value, str | list) and value, param  # an example, never left empty
            continue
        assert value == params[param].default, param
        assert type(value) is type(params[param].default), param  # 3600.0, not 3600 or "3600"
    if name == "apply-nightly":
        assert deployment["parameters"]["ops"] == "s3://my-bucket/operations/nightly.csv"
    assert deployment["parameters"]["ledger"] == LEDGERS[name]
    if "report_dir" in deployment["parameters"]:  # the report outlives the worker too
        assert deployment["parameters"]["report_dir"].startswith("s3://")
    env = deployment["work_pool"]["job_variables"]["env"]
    assert env["VIDEOFERRY_TOKEN_BLOCK"] and env["VIDEOFERRY_WORKDIR"]  # the Secret block, the working folder


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_nightly_deployments_run_on_a_cron(name: str) -> None:
    _config, deployment, _flow = _deployment(name)
    # Prefect 3's `schedules:` list; the legacy `schedule:` key beside it makes `prefect deploy` fail.
    assert "schedule" not in deployment
    (schedule,) = deployment["schedules"]
    assert schedule == SCHEDULES[name]
    # Prefect's own models take it as written (a valid cron, an IANA timezone): what `prefect deploy` sends.
    cron = CronSchedule(cron=schedule["cron"], timezone=schedule["timezone"])
    sent = DeploymentScheduleCreate(schedule=cron, active=schedule["active"])
    assert isinstance(sent.schedule, CronSchedule) and sent.schedule.timezone == "UTC" and sent.active


@pytest.mark.parametrize("name", ["migrate", "check"])
def test_on_demand_deployments_have_no_schedule(name: str) -> None:
    _config, deployment, _flow = _deployment(name)
    assert deployment.get("schedule") is None and not deployment.get("schedules")


#: Every job's flow (module:function), its declared options and the ones it takes (None: every flow field).
JOB_FLOWS = {
    "flows.migrate.flow:migrate_flow": (MigrateOptions, None),
    "flows.apply.flow:apply_flow": (ApplyOptions, None),
    "flows.archive.flow:archive_flow": (ArchiveOptions, None),
    "flows.backup.flow:backup_flow": (BackupOptions, None),
    "flows.setup.flow:setup_plan_flow": (SetupOptions, PLAN_FIELDS),
    "flows.setup.flow:setup_up_flow": (SetupOptions, UP_FIELDS),
    "flows.setup.flow:setup_drift_flow": (SetupOptions, DRIFT_FIELDS),
    "flows.check.flow:check_flow": (CheckOptions, None),
}


def _flow(path: str) -> Any:
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _declared(declaration: type, names: tuple[str, ...] | None) -> list[dataclasses.Field[Any]]:
    return [f for f in flow_fields(declaration) if names is None or f.name in names]


def test_every_deployment_runs_a_job_flow() -> None:
    config = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    entrypoints = {d["entrypoint"].replace(".py:", ":").replace("/", ".") for d in config["deployments"]}
    assert entrypoints <= set(JOB_FLOWS)


@pytest.mark.parametrize("path", list(JOB_FLOWS))
def test_flow_parameters_are_the_declared_options(path: str) -> None:
    flow = _flow(path)
    declaration, names = JOB_FLOWS[path]
    params = inspect.signature(flow.fn).parameters
    hints = typing.get_type_hints(flow.fn)
    declared_hints = {**typing.get_type_hints(declaration), **typing.get_type_hints(ServiceOptions)}
    # The flow's signature is written out (Prefect and `prefect deploy` read it); it is the declaration's:
    # its options the flow takes, in their order, then ServiceOptions' (the token is never one).
    fields = [*_declared(declaration, names), *dataclasses.fields(ServiceOptions)]
    assert list(params) == [f.name for f in fields]
    for spec in fields:
        param = params[spec.name]
        default = inspect.Parameter.empty if spec.default is dataclasses.MISSING else spec.default
        assert param.default == default, spec.name
        assert type(param.default) is type(default), spec.name
        assert hints[spec.name] == declared_hints[spec.name], spec.name
    for name in SETTINGS_PARAMS:
        assert params[name].default is None, name  # None: read from the worker's environment


def test_migrate_takes_every_option_but_the_requeue() -> None:
    params = inspect.signature(_flow("flows.migrate.flow:migrate_flow").fn).parameters
    # The one option the flow does not take: requeueing failed items is always on through Prefect.
    assert {f.name for f in dataclasses.fields(MigrateOptions)} - set(params) == {"retry_failed"}


def test_flow_parameters_give_back_the_options() -> None:
    opts = MigrateOptions(
        inventory="inv.csv", transfers=7, chunk_size=MIB, wait_timeout=None, retry_errors=True
    )
    again, service = options_from_params(MigrateOptions, {**params(opts), "api_url": "http://x"})
    assert again == opts and service == ServiceOptions(api_url="http://x")
    assert options_from_params(MigrateOptions, {"inventory": "i", "wait_timeout": 0})[0].wait_timeout is None
    archive = ArchiveOptions(to="s3://b/p/", project="p", tags=["archived"])
    assert options_from_params(ArchiveOptions, params(archive))[0] == archive
    backup = BackupOptions(
        project="6f1c2a9e-0000-4000-8000-000000000001", to="s3://b/p/", since="7d", prune=True
    )
    assert options_from_params(BackupOptions, params(backup))[0] == backup
