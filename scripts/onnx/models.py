"""Real models on kiln against onnxruntime (issue 46): scripts/onnx-models.sh runs this.

Four models with random weights (seeded), exported with torch.onnx.export at opset 17:
  resnet18      torchvision's ResNet-18, 224x224 images, 1000 logits
  mobilenet_v2  torchvision's MobileNetV2, 224x224 images, 1000 logits
  bert          a BERT-style encoder: 4 post-LayerNorm layers, hidden 256, 4 heads, FFN 1024,
                exact (erf) GELU, learned position embeddings, seq 128, int64 token ids in,
                the last hidden states out
  gpt2          a GPT-2-style decoder: 4 pre-LayerNorm layers, hidden 256, 4 heads, FFN 1024,
                tanh GELU, causal self-attention, learned position embeddings, seq 128, int64
                token ids in, logits over the vocabulary out (the LM head tied to the embedding)

Each model is exported once per batch size with static shapes: kiln compiles for the shapes it is
given anyway, onnxruntime plans its memory for them, and with fixed shapes the exporter folds the
Shape -> Gather -> Concat chains of view()/reshape into constants, so both runtimes run the same
graph of compute ops (a dynamic batch would leave those chains in for both to evaluate per call).

Both runtimes get the same inputs. onnxruntime runs on the CPU with intra_op_num_threads=2,
inter_op_num_threads=1; kiln runs through bench/kiln_onnx_bench (its cpu backend with 2 threads,
an empty compile cache per model). Times:
  first   onnxruntime: InferenceSession creation + the first run; kiln: Model::load + the first
          run (graph, schedule, compile, run), in a fresh process with an empty KILN_CACHE_DIR
  steady  the median of --iters calls after warm-up (kiln's are kiln::Jit replays), the best of
          --rounds alternating rounds
Outputs must agree within rtol 1e-3 and atol 1e-4 * max(1, max |onnxruntime's output|) (random
weights give logits of order 1-10; the atol keeps values near zero from failing on float32
summation order alone).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

SEQ = 128
HIDDEN = 256
LAYERS = 4
HEADS = 4
FFN = 4 * HIDDEN
BERT_VOCAB = 30522      # BERT's WordPiece vocabulary (only a Gather reads it)
GPT2_VOCAB = 8192       # smaller than GPT-2's 50257 so that the tied LM head (a 256 x vocab matmul)
                        # does not turn the whole comparison into one matmul; --gpt2-vocab changes it
OPSET = 17


def build_model(name, gpt2_vocab):
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self, causal):
            super().__init__()
            self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
            self.proj = nn.Linear(HIDDEN, HIDDEN)
            self.causal = causal
            if causal:
                self.register_buffer("mask", torch.triu(torch.ones(SEQ, SEQ, dtype=torch.bool), 1), persistent=False)

        def forward(self, x):
            b, s, _ = x.shape
            d = HIDDEN // HEADS
            q, k, v = self.qkv(x).split(HIDDEN, dim=2)
            q, k, v = (t.view(b, s, HEADS, d).transpose(1, 2) for t in (q, k, v))
            scores = q @ k.transpose(-2, -1) / d ** 0.5
            if self.causal:
                scores = scores.masked_fill(self.mask[:s, :s], float("-inf"))
            y = scores.softmax(-1) @ v
            return self.proj(y.transpose(1, 2).reshape(b, s, HIDDEN))

    class Mlp(nn.Module):
        def __init__(self, approximate):
            super().__init__()
            self.up, self.act, self.down = nn.Linear(HIDDEN, FFN), nn.GELU(approximate=approximate), nn.Linear(FFN, HIDDEN)

        def forward(self, x):
            return self.down(self.act(self.up(x)))

    class BertLayer(nn.Module):  # post-LayerNorm
        def __init__(self):
            super().__init__()
            self.attn, self.ln1, self.mlp, self.ln2 = Attention(False), nn.LayerNorm(HIDDEN), Mlp("none"), nn.LayerNorm(HIDDEN)

        def forward(self, x):
            x = self.ln1(x + self.attn(x))
            return self.ln2(x + self.mlp(x))

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(BERT_VOCAB, HIDDEN), nn.Embedding(SEQ, HIDDEN)
            self.ln = nn.LayerNorm(HIDDEN)
            self.layers = nn.ModuleList(BertLayer() for _ in range(LAYERS))

        def forward(self, ids):
            x = self.ln(self.tok(ids) + self.pos.weight[: ids.shape[1]])
            for layer in self.layers:
                x = layer(x)
            return x

    class Gpt2Block(nn.Module):  # pre-LayerNorm
        def __init__(self):
            super().__init__()
            self.ln1, self.attn, self.ln2, self.mlp = nn.LayerNorm(HIDDEN), Attention(True), nn.LayerNorm(HIDDEN), Mlp("tanh")

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class Gpt2(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(gpt2_vocab, HIDDEN), nn.Embedding(SEQ, HIDDEN)
            self.blocks = nn.ModuleList(Gpt2Block() for _ in range(LAYERS))
            self.ln = nn.LayerNorm(HIDDEN)

        def forward(self, ids):
            x = self.tok(ids) + self.pos.weight[: ids.shape[1]]
            for block in self.blocks:
                x = block(x)
            return self.ln(x) @ self.tok.weight.t()

    def calibrated(model):
        # With the init's BatchNorm statistics (mean 0, var 1) activations shrink layer by layer
        # (MobileNetV2's logits come out ~1e-9, so any output would "agree"); statistics measured
        # on a few random batches keep every layer's activations, and the logits, of order 1.
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.reset_running_stats()
                m.momentum = None  # a cumulative average over the batches below
        model.train()
        with torch.no_grad():
            for _ in range(4):
                model(torch.randn(8, 3, 224, 224))
        return model

    torch.manual_seed(0)
    if name == "resnet18":
        import torchvision
        return calibrated(torchvision.models.resnet18())
    if name == "mobilenet_v2":
        import torchvision
        return calibrated(torchvision.models.mobilenet_v2())
    if name == "bert":
        return Bert()
    if name == "gpt2":
        return Gpt2()
    raise SystemExit(f"unknown model {name}")


def make_inputs(name, batch, gpt2_vocab):
    rng = np.random.default_rng(batch)
    if name in ("resnet18", "mobilenet_v2"):
        return {"images": rng.standard_normal((batch, 3, 224, 224), dtype=np.float32)}
    vocab = BERT_VOCAB if name == "bert" else gpt2_vocab
    return {"input_ids": rng.integers(0, vocab, (batch, SEQ), dtype=np.int64)}


def export(name, batch, cache, gpt2_vocab):
    """The model file for this batch size (exported once, kept in the cache) and its inputs as .pb files."""
    import onnx
    from onnx import numpy_helper

    tag = f"{name}_b{batch}" + (f"_v{gpt2_vocab}" if name == "gpt2" else "")
    path = os.path.join(cache, tag + ".onnx")
    inputs = make_inputs(name, batch, gpt2_vocab)
    if not os.path.exists(path):
        import torch
        model = build_model(name, gpt2_vocab).eval()
        args = tuple(torch.from_numpy(v) for v in inputs.values())
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            # The TorchScript exporter: the dynamo one needs onnxscript and writes opset 18+.
            torch.onnx.export(model, args, path + ".tmp", opset_version=OPSET, dynamo=False,
                              input_names=list(inputs), output_names=["logits" if name != "bert" else "hidden"],
                              do_constant_folding=True)
        onnx.checker.check_model(path + ".tmp")
        os.replace(path + ".tmp", path)
    files = {}
    for k, v in inputs.items():
        files[k] = os.path.join(cache, f"{tag}_{k}.pb")
        with open(files[k], "wb") as f:
            f.write(numpy_helper.from_array(v, k).SerializeToString())
    return path, inputs, files


def run_ort(path, inputs, iters):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.inter_op_num_threads = 1
    t0 = time.perf_counter()
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    out = sess.run(None, inputs)
    first = time.perf_counter() - t0
    for _ in range(3):
        sess.run(None, inputs)
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        sess.run(None, inputs)
        times.append(time.perf_counter() - t)
    return {"first_s": first, "steady_s": statistics.median(times), "steady_min_s": min(times),
            "outputs": {o.name: v for o, v in zip(sess.get_outputs(), out)}}


def run_kiln(bench, path, files, iters, workdir, cache, profile):
    config = os.path.join(workdir, "kiln.toml")
    with open(config, "w") as f:
        f.write("[backends.cpu.options]\nthreads = 2\n")
    env = dict(os.environ, KILN_CACHE_DIR=cache, KILN_CONFIG=config, KILN_DEVICE="cpu")
    env.pop("KILN_BEAM", None)
    outdir = tempfile.mkdtemp(prefix="out-", dir=workdir)
    cmd = [bench, path, "--out", outdir, "--iters", str(iters)]
    for k, f in files.items():
        cmd += ["--input", f"{k}={f}"]
    if profile:
        cmd.append("--profile")
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit " + str(p.returncode)])[-1]}
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["outputs"] = {o["name"]: np.load(o["file"]) for o in r["outputs"]}
    if profile:
        r["profile"] = p.stderr
    return r


def compare(kiln_out, ort_out):
    worst = ""
    ok = True
    for name, ref in ort_out.items():
        got = kiln_out.get(name)
        if got is None or got.shape != ref.shape or got.dtype != ref.dtype:
            return False, f"{name}: kiln {None if got is None else (got.dtype, got.shape)}, ort {(ref.dtype, ref.shape)}"
        atol = 1e-4 * max(1.0, float(np.abs(ref).max()))
        err = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        ok = ok and bool(np.all(err <= atol + 1e-3 * np.abs(ref))) and not np.isnan(got).any()
        worst = f"max abs err {err.max():.2g} (max abs output {np.abs(ref).max():.3g})"
    return ok, worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kiln-bench", required=True, help="the kiln_onnx_bench binary")
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/kiln/onnx-models"), help="exported models and inputs")
    ap.add_argument("--models", default="resnet18,mobilenet_v2,bert,gpt2")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--iters", type=int, default=20, help="steady calls timed per process")
    ap.add_argument("--rounds", type=int, default=3, help="alternating onnxruntime / kiln rounds per model")
    ap.add_argument("--gpt2-vocab", type=int, default=GPT2_VOCAB)
    ap.add_argument("--profile", action="store_true", help="print kiln's per-kernel table of one call per model")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--markdown", help="write the table here (markdown)")
    a = ap.parse_args()
    os.makedirs(a.cache, exist_ok=True)
    work = tempfile.mkdtemp(prefix="kiln-onnx-models-")
    rows = []
    header = (f"{'model':<13}{'batch':>6}{'kiln first':>12}{'ORT first':>11}{'kiln warm':>11}{'kiln steady':>13}"
              f"{'ORT steady':>12}{'steady ratio':>14}{'kernels':>9}  outputs")
    print(header, flush=True)
    med = statistics.median
    for name in a.models.split(","):
        for batch in (int(b) for b in a.batches.split(",")):
            path, inputs, files = export(name, batch, a.cache, a.gpt2_vocab)
            # Rounds alternate the two runtimes so that a busy moment on the machine does not
            # land on one of them only. Within a process a steady figure is the median of its
            # calls; across rounds each runtime keeps its best round (neighbouring jobs only ever
            # slow a round down) and first calls the median round.
            ort_rs, kiln_rs, warm_rs = [], [], []
            for rnd in range(a.rounds):
                ort_rs.append(run_ort(path, inputs, a.iters))
                cache = tempfile.mkdtemp(prefix="cache-", dir=work)  # empty: the first call compiles everything
                kiln_rs.append(run_kiln(a.kiln_bench, path, files, a.iters, work, cache, a.profile and rnd == 0))
                if "error" in kiln_rs[-1]:
                    break
                # The same again with the compiled kernels on disk: a model's second start.
                warm_rs.append(run_kiln(a.kiln_bench, path, files, a.iters, work, cache, False))
            row = {"model": name, "batch": batch, "rounds": len(ort_rs),
                   "ort_first_s": med(r["first_s"] for r in ort_rs), "ort_steady_s": min(r["steady_s"] for r in ort_rs)}
            k = kiln_rs[-1]
            if "error" in k:
                row["error"] = k["error"]
                print(f"{name:<13}{batch:>6}{'-':>12}{row['ort_first_s'] * 1e3:>9.0f}ms{'-':>11}{'-':>13}"
                      f"{row['ort_steady_s'] * 1e3:>10.2f}ms{'-':>14}{'-':>9}  kiln failed: {k['error']}", flush=True)
            else:
                ok, detail = compare(kiln_rs[0]["outputs"], ort_rs[0]["outputs"])
                for key in ("first_s", "load_s", "build_s", "realize_s"):
                    row[key] = med(r[key] for r in kiln_rs)
                row["warm_first_s"] = med(r["first_s"] for r in warm_rs)
                row["steady_s"] = min(r["steady_s"] for r in kiln_rs + warm_rs)
                row["eager_s"] = min(r["eager_s"] for r in kiln_rs + warm_rs)
                row["kernels"] = k["kernels"]
                row.update({"agree": ok, "detail": detail, "ratio": row["steady_s"] / row["ort_steady_s"]})
                print(f"{name:<13}{batch:>6}{row['first_s'] * 1e3:>10.0f}ms{row['ort_first_s'] * 1e3:>9.0f}ms"
                      f"{row['warm_first_s'] * 1e3:>9.0f}ms{row['steady_s'] * 1e3:>11.2f}ms{row['ort_steady_s'] * 1e3:>10.2f}ms"
                      f"{row['ratio']:>13.2f}x{row['kernels']:>9}  {'agree' if ok else 'DIFFER'}: {detail}", flush=True)
                if a.profile:
                    print(kiln_rs[0]["profile"], flush=True)
            rows.append(row)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("| model | batch | kiln first | ORT first | kiln first, disk cache | kiln steady | ORT steady | "
                    "kiln / ORT steady | kernels | outputs |\n")
            f.write("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
            for r in rows:
                if "error" in r:
                    f.write(f"| {r['model']} | {r['batch']} | - | {r['ort_first_s'] * 1e3:.0f} ms | - | - | "
                            f"{r['ort_steady_s'] * 1e3:.2f} ms | - | - | kiln failed: {r['error']} |\n")
                else:
                    f.write(f"| {r['model']} | {r['batch']} | {r['first_s'] * 1e3:.0f} ms | {r['ort_first_s'] * 1e3:.0f} ms | "
                            f"{r['warm_first_s'] * 1e3:.0f} ms | {r['steady_s'] * 1e3:.2f} ms | {r['ort_steady_s'] * 1e3:.2f} ms | "
                            f"{r['ratio']:.2f}x | {r['kernels']} | {'agree' if r['agree'] else 'DIFFER'}, {r['detail']} |\n")
    shutil.rmtree(work, ignore_errors=True)  # the kiln caches and output copies of each round
    failed = [r for r in rows if "error" in r or not r.get("agree")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
