"""The recorder's cost (issue 27 §1), for `scripts/bench --only recorder`: ratios in one run.

Each training step is timed plainly, under a do-nothing TorchFunctionMode (the floor of any
function-mode mechanism), under backward_twice's recorder, and under anomaly mode (the reference
it replaces: a full stack per op). Interleaved rounds, the best of each; one thread.
Cost per recorded op = (recorder - plain) / the number of outermost torch calls in a step.
"""
from __future__ import annotations

import contextlib
import time

CASES = ("small CNN, batch 32", "nn.LSTM 2x64, 35 steps, batch 16", "LSTMCell loop, 35 steps, batch 16")


def _steps():
    import torch
    from torch import nn

    torch.manual_seed(0)

    def cnn():
        net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                            nn.Linear(8 * 7 * 7, 10))
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        x, y = torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,))

        def step():
            opt.zero_grad()
            nn.functional.cross_entropy(net(x), y).backward()
            opt.step()
        return step

    def lstm():
        net, head = nn.LSTM(64, 64, num_layers=2), nn.Linear(64, 1)
        opt = torch.optim.SGD([*net.parameters(), *head.parameters()], lr=0.01)
        x = torch.randn(35, 16, 64)

        def step():
            opt.zero_grad()
            out, _ = net(x)
            head(out).pow(2).mean().backward()
            opt.step()
        return step

    def cell():
        c, head = nn.LSTMCell(64, 64), nn.Linear(64, 1)
        opt = torch.optim.SGD([*c.parameters(), *head.parameters()], lr=0.01)
        x = torch.randn(35, 16, 64)

        def step():
            opt.zero_grad()
            h, cc, loss = torch.zeros(16, 64), torch.zeros(16, 64), 0
            for t in range(35):
                h, cc = c(x[t], (h, cc))
                loss = loss + head(h).pow(2).mean()
            loss.backward()
            opt.step()
        return step

    return dict(zip(CASES, (cnn(), lstm(), cell())))


def _count_calls(step) -> int:
    from torch.overrides import TorchFunctionMode

    class Count(TorchFunctionMode):
        n = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            Count.n += 1
            return func(*args, **(kwargs or {}))

    with Count():
        step()
    return Count.n


def recorder_bench(rounds: int = 5, n: int = 20) -> dict:
    import torch
    from torch.overrides import TorchFunctionMode

    from backward_twice.recorder import Recorder

    class Null(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    ways = {"plain": contextlib.nullcontext, "do-nothing mode": Null, "recorder": Recorder,
            "anomaly mode": lambda: torch.autograd.detect_anomaly(check_nan=False)}
    out = {}
    try:
        import warnings

        warnings.filterwarnings("ignore", message="Anomaly Detection has been enabled")
        for case, step in _steps().items():
            best = {k: float("inf") for k in ways}
            for _ in range(rounds):
                for k, make in ways.items():
                    with make():
                        step()
                        t = time.perf_counter()
                        for _ in range(n):
                            step()
                        best[k] = min(best[k], (time.perf_counter() - t) / n)
            calls = _count_calls(step)
            out[case] = {**{k: v * 1e3 for k, v in best.items()}, "calls": calls,
                         "us_per_call": (best["recorder"] - best["plain"]) * 1e6 / calls}
    finally:
        torch.set_num_threads(threads)
    return out


def report(res: dict) -> str:
    rows = ["| step | plain | do-nothing mode | recorder | anomaly mode | torch calls | recorder's cost per call |",
            "|---|---|---|---|---|---|---|"]
    for case, r in res.items():
        p = r["plain"]
        rows.append(f"| {case} | {p:.2f} ms | {r['do-nothing mode'] / p:.2f}x | {r['recorder'] / p:.2f}x | "
                    f"{r['anomaly mode'] / p:.2f}x | {r['calls']} | {r['us_per_call']:.1f} µs |")
    return "\n".join(rows)


def check(res: dict) -> list:
    """Issue 27's budget: at most 1.5x a plain step on the small CNN and the nn.LSTM step."""
    return [f"recorder on {case}: {r['recorder'] / r['plain']:.2f}x a plain step (budget 1.5x)"
            for case, r in res.items() if case != CASES[2] and r["recorder"] / r["plain"] > 1.5]


if __name__ == "__main__":
    print(report(recorder_bench()))
