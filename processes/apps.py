from django.apps import AppConfig


class ProcessesConfig(AppConfig):
    name = "processes"
    verbose_name = "Processes"

    def ready(self) -> None:
        import processes.bulk.admin  # noqa: F401  (admin autodiscovery reads only admin.py)
        import processes.events.admin  # noqa: F401  (admin autodiscovery reads only admin.py)
        import processes.human_tasks.admin  # noqa: F401  (admin autodiscovery reads only admin.py)
        import processes.rest_resources  # noqa: F401  (registers process_run, process_run_step)
        import processes.schedules.admin  # noqa: F401  (admin autodiscovery reads only admin.py)

        _lower_rooms_connect()
        _system_schedules_declare()


def _lower_rooms_connect() -> None:
    """Lower rooms call up only through these registries and signals (imported here: the app
    registry is ready)."""
    from extensions.bundle_parts import bundle_part_register
    from extensions.kinds import kind_register, typecheck_register
    from extensions.signals import extension_deployed, extension_removing
    from extensions.store import store_forget_connect
    from processes.api.reads import triggers_provider_register
    from processes.authoring_types import deploy_declarations
    from processes.contract import process_contract_check
    from processes.engine.verdict_wakeups import on_source_verdicts, on_verdicts_folded
    from processes.events.service import event_starter_register
    from processes.lineage import lineage_runs_describe
    from processes.observe import observe_connect
    from processes.planning import plan_watcher
    from processes.registry import process_sync_from_module
    from processes.schedules.bundle_part import SchedulesPart
    from processes.schedules.receivers import schedule_remove_guard
    from processes.schedules.service import schedule_triggers_for
    from processes.triggers.event_sent import event_triggers_start
    from processes.triggers.index import trigger_index_forget
    from processes.triggers.record_entered import record_watcher
    from records.lineage import lineage_runs_describer
    from records.verdicts import source_verdicts, verdicts_folded
    from records.watches import watcher_provider_register

    observe_connect()  # runs started and finished (/metrics), a run's trace
    kind_register("process", process_contract_check)
    typecheck_register("process", deploy_declarations)  # the deploy's type check
    watcher_provider_register(plan_watcher)
    lineage_runs_describer(lineage_runs_describe)
    extension_deployed.connect(process_sync_from_module, dispatch_uid="processes.sync")
    extension_removing.connect(
        schedule_remove_guard, dispatch_uid="processes.schedules.remove_guard"
    )
    source_verdicts.connect(on_source_verdicts, dispatch_uid="processes.wake_on_verdict")
    # In the verdicts' transaction: the ledger row of a step waiting on the write takes its verdict.
    verdicts_folded.connect(on_verdicts_folded, dispatch_uid="processes.fold_verdict")
    triggers_provider_register(schedule_triggers_for)
    # Record triggers: the boundary asks for a type's watcher; a deploy here forgets the index.
    watcher_provider_register(record_watcher)
    store_forget_connect(trigger_index_forget)
    # Event triggers: every new event starts its name's runs, in the event's transaction.
    event_starter_register(event_triggers_start)
    bundle_part_register(SchedulesPart())


def _system_schedules_declare() -> None:
    from kernel.system_schedules import system_schedule_declare

    # Every minute: re-queue parked runs that are due and runs whose worker died; fire the
    # bundle schedules that are due.
    system_schedule_declare("system.processes.sweep", "processes.tasks.runs_sweep")
    # Every minute: fold the run tally's deltas (the queue's counts read the tally).
    system_schedule_declare("system.processes.tally", "processes.tasks.run_tally_fold")
    system_schedule_declare(
        "system.processes.schedules", "processes.schedules.firing.schedules_tick"
    )
    # Every minute: cancel the runs past processes.run_timeout_ms (0: none).
    system_schedule_declare("system.processes.run_timeout", "processes.tasks.runs_timeout_sweep")
    # Every hour: purge the finished runs past history.retain_days / history.retain_runs.
    system_schedule_declare(
        "system.processes.history_purge", "processes.tasks.history_purge", minutes=60
    )
