"""PyTorch side of the engine-against-PyTorch training-loop benchmark.

Run by `cargo bench -p fl_engine --bench torch_compare`, which writes the rows, runs this
script and the engine's `train_local` on the same case, and prints the ratios. It builds the
engine's model in PyTorch (same layers, widths, parameter count, initialisation family,
dropout placement, masked-series semantics), trains it with the same optimiser, loss, batch
size and thread count on the same rows, and prints one JSON line: the parameter count and the
wall time of each timed loop.

A loop is what the engine's `train_local` does for `epochs` epochs: per epoch a fresh
permutation (`DataLoader(shuffle=True, drop_last=False)` semantics, done by indexing the
tensors, which is faster than a `DataLoader`), and per batch zero_grad, forward, loss,
backward, optimiser step and `loss.item()` (the engine reads every batch loss too).

On a GPU (`"device": "cuda"`) the rows, model and optimiser live on the GPU, and the loop's
`loss.item()` per batch synchronises as the engine's batch-loss read does.

Usage: torch_side.py CASE_JSON ROWS_FILE  (ROWS_FILE: little-endian f32, n rows of
`inputs` features followed by the label).
"""

import json
import sys
import time

import torch
from torch import nn


class MaskedRecurrent(nn.Module):
    """GRU/LSTM over `[time * features | mask]` rows, as the engine's recurrent backbone with a
    per-step mask: inputs are the masked values plus the mask channel, and a missing step
    carries the state over (`s = s + p (new - s)`); the last state feeds a linear output."""

    def __init__(self, cell, time_steps, features, hidden):
        super().__init__()
        self.t, self.f, self.h = time_steps, features, hidden
        self.lstm = cell == "lstm"
        cls = nn.LSTMCell if self.lstm else nn.GRUCell
        self.cell = cls(features + 1, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        b = x.shape[0]
        tf = self.t * self.f
        series = x[:, :tf].reshape(b, self.t, self.f)
        m = x[:, tf : tf + self.t].reshape(b, self.t, 1)
        inputs = torch.cat([series * m, m], 2)
        h = x.new_zeros(b, self.h)
        c = x.new_zeros(b, self.h)
        for t in range(self.t):
            p = m[:, t]
            if self.lstm:
                nh, nc = self.cell(inputs[:, t], (h, c))
                c = c + (nc - c) * p
            else:
                nh = self.cell(inputs[:, t], h)
            h = h + (nh - h) * p
        return self.out(h)


class ConvGn(nn.Module):
    def __init__(self, cin, cout, k, stride, groups):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False)
        self.gn = nn.GroupNorm(groups, cout, eps=1e-5)

    def forward(self, x):
        return self.gn(self.conv(x))


class Cnn(nn.Module):
    """The engine's ResNet-style GroupNorm CNN (see `CnnConfig`)."""

    def __init__(self, channels, side, stages, groups):
        super().__init__()
        self.shape = (channels, side, side)
        self.stem = ConvGn(channels, stages[0], 3, 1, groups)
        blocks = []
        width = stages[0]
        for i, s in enumerate(stages):
            stride = 1 if i == 0 else 2
            block = nn.Module()
            block.a = ConvGn(width, s, 3, stride, groups)
            block.b = ConvGn(s, s, 3, 1, groups)
            block.proj = ConvGn(width, s, 1, stride, groups) if stride != 1 or width != s else None
            blocks.append(block)
            width = s
        self.blocks = nn.ModuleList(blocks)
        self.out = nn.Linear(width, 1)

    def forward(self, x):
        h = torch.relu(self.stem(x.reshape(x.shape[0], *self.shape)))
        for blk in self.blocks:
            y = blk.b(torch.relu(blk.a(h)))
            skip = blk.proj(h) if blk.proj is not None else h
            h = torch.relu(y + skip)
        return self.out(h.mean(dim=(2, 3)))


def mlp(inputs, hidden, dropout):
    layers, width = [], inputs
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        if dropout > 0:
            layers.append(nn.Dropout(dropout))
        width = h
    layers.append(nn.Linear(width, 1))
    return nn.Sequential(*layers)


def build(case):
    m = case["model"]
    if m["kind"] == "mlp":
        return mlp(m["inputs"], m["hidden"], m["dropout"])
    if m["kind"] == "recurrent":
        return MaskedRecurrent(m["cell"], m["time"], m["features"], m["hidden"])
    if m["kind"] == "cnn":
        return Cnn(m["channels"], m["side"], m["stages"], m["groups"])
    raise ValueError(f"unknown model kind {m['kind']}")


def main():
    case = json.loads(sys.argv[1])
    threads = case["threads"]
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(0)
    width = case["inputs"] + 1
    raw = torch.from_file(sys.argv[2], shared=False, size=case["rows"] * width, dtype=torch.float32)
    raw = raw.reshape(case["rows"], width)
    device = torch.device(case.get("device", "cpu"))
    x = raw[:, :-1].contiguous().to(device)
    y = raw[:, -1:].contiguous().to(device)
    model = build(case).to(device)
    model.train()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=case["lr"])
    loss_fn = nn.BCEWithLogitsLoss()
    n, batch = x.shape[0], case["batch"]

    def one_loop():
        total = 0.0
        for _ in range(case["epochs"]):
            perm = torch.randperm(n, device=device)
            for i in range(0, n, batch):
                idx = perm[i : i + batch]
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(x[idx]), y[idx])
                loss.backward()
                opt.step()
                total += loss.item()
        return total

    for _ in range(case["warmup"]):
        one_loop()
    times = []
    for _ in range(case["repeats"]):
        start = time.perf_counter()
        one_loop()
        times.append(time.perf_counter() - start)
    print(json.dumps({"params": params, "times": times, "torch": torch.__version__,
                      "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"}))


if __name__ == "__main__":
    main()
