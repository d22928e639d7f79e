"""helpers.distributed: real gloo groups on 127.0.0.1, errors raised in the parent with the
worker's rank, a port the OS picks, and no worker process left behind, whatever happened."""
import socket
import time

import ddp_programs
import pytest
import torch

from helpers import distributed
from helpers.distributed import WorkerError, WorkerTimeout, pids_alive, run


def no_worker_left():
    assert len(distributed.last_pids) >= 1
    assert pids_alive(distributed.last_pids) == [], "a worker process outlived run()"


def test_two_processes_form_one_group_and_return_in_rank_order():
    results = run(ddp_programs.sum_of_ranks, world_size=2)
    assert [r["rank"] for r in results] == [0, 1]
    assert [r["world_size"] for r in results] == [2, 2]
    assert [r["sum"].item() for r in results] == [3.0, 3.0]        # 1 + 2, seen by both ranks
    no_worker_left()
    three = run(ddp_programs.sum_of_ranks, world_size=3)
    assert three[2]["sum"].item() == 6.0
    no_worker_left()


def test_a_worker_error_is_raised_in_the_parent_with_its_rank():
    start = time.monotonic()
    with pytest.raises(WorkerError) as caught:
        run(ddp_programs.fails_on, world_size=2, timeout=60, bad_rank=1)
    err = caught.value
    assert (err.rank, err.kind, err.message) == (1, "ValueError", "no data for rank 1")
    assert str(err).startswith("rank 1 of 2 raised ValueError: no data for rank 1")
    assert "fails_on" in err.worker_traceback
    # what a real job's log shows: torch's excepthook (set by init_process_group) prefixes each line
    lines = [line for line in err.logged.splitlines() if line]
    assert lines[0] == "[rank1]: Traceback (most recent call last):" and lines[-1] == "[rank1]: ValueError: no data for rank 1"
    assert all(line.startswith("[rank1]: ") for line in lines)
    # rank 0 was stuck in all_reduce: it errored too (peer gone) or was terminated; not the 60 s limit
    assert time.monotonic() - start < 30
    no_worker_left()


def test_the_time_limit_terminates_every_worker():
    with pytest.raises(WorkerTimeout, match=r"ranks \[0, 1\] did not finish within 3 s"):
        run(ddp_programs.sleeps, world_size=2, timeout=3, seconds=120)
    no_worker_left()


def test_the_port_is_the_os_choice_not_a_fixed_default():
    holder = socket.socket()
    try:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("127.0.0.1", 29500))        # torch's usual MASTER_PORT, taken
        holder.listen()
    except OSError:
        pass                                     # already taken by someone else: the same test
    try:
        assert [r["sum"].item() for r in run(ddp_programs.sum_of_ranks)] == [3.0, 3.0]
    finally:
        holder.close()
    no_worker_left()


def test_worker_output_goes_to_logs_not_to_the_cell(capfd):
    assert run(ddp_programs.prints) == [0, 1]
    assert distributed.last_logs == {0: "hello from rank 0\n", 1: "hello from rank 1\n"}
    out, err = capfd.readouterr()
    assert "hello from rank" not in out + err


def test_bad_inputs_are_clear_errors():
    def local(rank, world_size):
        return rank
    with pytest.raises(ValueError, match="spawned processes cannot import it"):
        run(local)
    with pytest.raises(TypeError, match="needs a function"):
        run("sum_of_ranks")
    for bad in (0, 9, 2.0, True):
        with pytest.raises(ValueError, match="world_size must be an int from 1 to 8"):
            run(ddp_programs.sum_of_ranks, world_size=bad)
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        run(ddp_programs.sum_of_ranks, timeout=0)


def test_results_are_plain_tensors_owned_by_the_parent():
    t = run(ddp_programs.sum_of_ranks)[0]["sum"]
    assert isinstance(t, torch.Tensor) and t.is_shared() is False


def test_the_same_error_on_every_rank_names_the_lowest_rank_whichever_came_first():
    with pytest.raises(WorkerError) as caught:
        run(ddp_programs.same_error, world_size=2)
    assert caught.value.rank == 0 and str(caught.value).endswith("(seen on rank 0)")
    assert set(caught.value.errors) == {0, 1}
    no_worker_left()
