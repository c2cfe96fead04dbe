#!/usr/bin/env python3
"""Builds three small transformers with random weights (GPT-2-, BERT- and Llama-style, written
here as plain torch modules: nothing is downloaded), exports each with torch's ONNX exporter,
and records the outputs onnxruntime computes on fixed inputs.

Writes, into tests/fixtures/onnx/ (or the directory given as the first argument):

- `NAME.onnx`: the exported model;
- `NAME.io.safetensors`: the fixed inputs and onnxruntime's outputs, under the ONNX names of
  the graph inputs and outputs.

The GPT-2-style model is exported with a symbolic batch and sequence dim (`batch`, `seq`);
the other two with static shapes. Needs torch, onnx and onnxruntime:

    python3 -m venv /tmp/fixenv && /tmp/fixenv/bin/pip install torch onnx onnxruntime
    /tmp/fixenv/bin/python scripts/make_fixtures.py
"""

import json
import math
import os
import struct
import sys

import numpy as np
import onnxruntime as ort
import torch
from torch import nn
import torch.nn.functional as F

OPSET = 20
BATCH, SEQ = 1, 8


class Config:
    vocab = 64
    hidden = 32
    heads = 2
    layers = 2
    intermediate = 64
    max_positions = 16


def attention(q, k, v, mask):
    """softmax(q k^T / sqrt(d) + mask) v, heads split: q, k, v are [b, h, t, d]."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores + mask
    return F.softmax(scores, dim=-1) @ v


def split_heads(x, heads):
    b, t, c = x.shape
    return x.view(b, t, heads, c // heads).transpose(1, 2)


def merge_heads(x):
    b, h, t, d = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d)


# GPT-2: learned positions, pre-norm LayerNorm, fused qkv projection, causal mask, tanh GELU,
# tied output embedding.
class Gpt2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c.heads
        self.ln_1 = nn.LayerNorm(c.hidden, eps=1e-5)
        self.c_attn = nn.Linear(c.hidden, 3 * c.hidden)
        self.c_proj = nn.Linear(c.hidden, c.hidden)
        self.ln_2 = nn.LayerNorm(c.hidden, eps=1e-5)
        self.c_fc = nn.Linear(c.hidden, 4 * c.hidden)
        self.mlp_proj = nn.Linear(4 * c.hidden, c.hidden)
        causal = torch.tril(torch.ones(c.max_positions, c.max_positions))
        self.register_buffer("bias", (1.0 - causal) * -1e9)

    def forward(self, x):
        t = x.size(1)
        q, k, v = self.c_attn(self.ln_1(x)).split(x.size(-1), dim=2)
        q, k, v = (split_heads(z, self.heads) for z in (q, k, v))
        y = attention(q, k, v, self.bias[:t, :t])
        x = x + self.c_proj(merge_heads(y))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt2(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c.vocab, c.hidden)
        self.wpe = nn.Embedding(c.max_positions, c.hidden)
        self.h = nn.ModuleList(Gpt2Block(c) for _ in range(c.layers))
        self.ln_f = nn.LayerNorm(c.hidden, eps=1e-5)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.size(1), device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(positions)
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()


# BERT: learned positions and token types, post-norm LayerNorm, bidirectional attention with
# an additive padding mask, erf GELU, a pooler.
class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c.heads
        self.query = nn.Linear(c.hidden, c.hidden)
        self.key = nn.Linear(c.hidden, c.hidden)
        self.value = nn.Linear(c.hidden, c.hidden)
        self.attn_out = nn.Linear(c.hidden, c.hidden)
        self.attn_norm = nn.LayerNorm(c.hidden, eps=1e-12)
        self.intermediate = nn.Linear(c.hidden, c.intermediate)
        self.output = nn.Linear(c.intermediate, c.hidden)
        self.out_norm = nn.LayerNorm(c.hidden, eps=1e-12)

    def forward(self, x, mask):
        q, k, v = (split_heads(p(x), self.heads) for p in (self.query, self.key, self.value))
        y = merge_heads(attention(q, k, v, mask))
        x = self.attn_norm(x + self.attn_out(y))
        return self.out_norm(x + self.output(F.gelu(self.intermediate(x))))


class Bert(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word = nn.Embedding(c.vocab, c.hidden)
        self.position = nn.Embedding(c.max_positions, c.hidden)
        self.token_type = nn.Embedding(2, c.hidden)
        self.norm = nn.LayerNorm(c.hidden, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(c) for _ in range(c.layers))
        self.pooler = nn.Linear(c.hidden, c.hidden)

    def forward(self, input_ids, attention_mask):
        positions = torch.arange(input_ids.size(1))
        types = torch.zeros_like(input_ids)
        x = self.word(input_ids) + self.position(positions) + self.token_type(types)
        x = self.norm(x)
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return x, pooled


# Llama: RMSNorm, rotary positions, no biases, causal mask, SiLU-gated MLP, untied head.
class RmsNorm(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c.heads
        self.input_layernorm = RmsNorm(c.hidden)
        self.q_proj = nn.Linear(c.hidden, c.hidden, bias=False)
        self.k_proj = nn.Linear(c.hidden, c.hidden, bias=False)
        self.v_proj = nn.Linear(c.hidden, c.hidden, bias=False)
        self.o_proj = nn.Linear(c.hidden, c.hidden, bias=False)
        self.post_attention_layernorm = RmsNorm(c.hidden)
        self.gate_proj = nn.Linear(c.hidden, c.intermediate, bias=False)
        self.up_proj = nn.Linear(c.hidden, c.intermediate, bias=False)
        self.down_proj = nn.Linear(c.intermediate, c.hidden, bias=False)

    def forward(self, x, cos, sin, mask):
        h = self.input_layernorm(x)
        q, k, v = (split_heads(p(h), self.heads) for p in (self.q_proj, self.k_proj, self.v_proj))
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        x = x + self.o_proj(merge_heads(attention(q, k, v, mask)))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c.hidden // c.heads
        self.embed_tokens = nn.Embedding(c.vocab, c.hidden)
        self.layers = nn.ModuleList(LlamaLayer(c) for _ in range(c.layers))
        self.norm = RmsNorm(c.hidden)
        self.lm_head = nn.Linear(c.hidden, c.vocab, bias=False)
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, d, 2).float() / d))
        angles = torch.outer(torch.arange(c.max_positions).float(), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos_cached", angles.cos())
        self.register_buffer("sin_cached", angles.sin())
        causal = torch.tril(torch.ones(c.max_positions, c.max_positions))
        self.register_buffer("causal_mask", (1.0 - causal) * -1e9)

    def forward(self, input_ids):
        t = input_ids.size(1)
        x = self.embed_tokens(input_ids)
        cos, sin = self.cos_cached[:t], self.sin_cached[:t]
        mask = self.causal_mask[:t, :t]
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))


def write_safetensors(path, tensors):
    """A safetensors file of numpy arrays (the format is a JSON header and raw bytes)."""
    dtypes = {np.dtype("float32"): "F32", np.dtype("int64"): "I64"}
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        array = np.ascontiguousarray(array)
        blob = array.tobytes()
        header[name] = {
            "dtype": dtypes[array.dtype],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        offset += len(blob)
        blobs.append(blob)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for blob in blobs:
            f.write(blob)
    os.replace(tmp, path)


def export(name, model, inputs, input_names, output_names, dynamic_axes, out_dir):
    model.eval()
    path = os.path.join(out_dir, name + ".onnx")
    tmp = path + ".tmp.onnx"
    with torch.no_grad():
        torch.onnx.export(
            model,
            tuple(torch.from_numpy(a) for a in inputs),
            tmp,
            input_names=input_names,
            output_names=output_names,
            dynamic_axes=dynamic_axes,
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
    os.replace(tmp, path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = dict(zip(input_names, inputs))
    outputs = session.run(output_names, feeds)
    io = dict(feeds)
    io.update(zip(output_names, outputs))
    write_safetensors(os.path.join(out_dir, name + ".io.safetensors"), io)
    ops = sorted({n.op_type for n in __import__("onnx").load(path).graph.node})
    print(f"{name}: {os.path.getsize(path)} bytes, ops {' '.join(ops)}")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "onnx"
    )
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    c = Config()
    rng = np.random.default_rng(0)
    ids = rng.integers(0, c.vocab, size=(BATCH, SEQ), dtype=np.int64)
    export(
        "gpt2_tiny",
        Gpt2(c),
        [ids],
        ["input_ids"],
        ["logits"],
        {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}},
        out_dir,
    )
    attention_mask = np.ones((BATCH, SEQ), dtype=np.int64)
    attention_mask[:, -2:] = 0
    export(
        "bert_tiny",
        Bert(c),
        [ids, attention_mask],
        ["input_ids", "attention_mask"],
        ["last_hidden_state", "pooler_output"],
        None,
        out_dir,
    )
    export("llama_tiny", Llama(c), [ids], ["input_ids"], ["logits"], None, out_dir)


if __name__ == "__main__":
    main()
