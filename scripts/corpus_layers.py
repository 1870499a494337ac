"""Programs at the shapes of real networks' layers (a ResNet-18 basic block, its stem's max pool,
ResNet's global average pool, an attention product): makers as in corpus.py, the expected
outputs from reference_numerics.py's plain numpy. All are corpus programs: the basic blocks (two
3x3 convs of 58-116 M MACs each) compile in seconds since schedules are costed analytically
(glc/cost/, issue 10).
"""

from __future__ import annotations

import numpy as np
from reference_numerics import conv2d_nchw, matmul, maxpool2d_nchw, relu, requantize, wrap_int32


def int8(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """int8 uniform over the whole range [-128, 127]."""
    return rng.integers(-128, 127, size=shape, dtype=np.int8, endpoint=True)


def spread_shift(x: np.ndarray) -> int:
    """The requantize shift that maps the 99th percentile of |x| into int8: a layer's outputs
    spread over the range instead of saturating or vanishing."""
    top = float(np.percentile(np.abs(x.astype(np.int64)), 99))
    return max(0, int(np.ceil(np.log2(max(top, 1.0) / 127))))


def _conv_nhwc(data: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """3x3, pad 1, stride 1 conv of NHWC data and HWIO weights, int32 NHWC result."""
    nchw = conv2d_nchw(data.transpose(0, 3, 1, 2), weights.transpose(3, 2, 0, 1), (1, 1),
                       ((1, 1), (1, 1)))
    return nchw.transpose(0, 2, 3, 1)


CONV = """(access-transpose
   (compute dot-product
    (access-cartesian-product
     (access (access-transpose (access-tensor {w}) (list 3 2 0 1)) 1)
     (access
      (access-squeeze
       (access-windows
        (access
         (access-transpose
          (access-pad (access-pad (access-tensor {x}) zero-padding 1 1 1) zero-padding 2 1 1)
          (list 0 3 1 2))
         1)
        (shape {c} 3 3)
        (shape 1 1 1))
       1)
      3)))
   (list 1 2 3 0))"""


def _basic_block(rng, size: int, channels: int):
    x = int8(rng, 1, size, size, channels)
    w1, w2 = int8(rng, 3, 3, channels, channels), int8(rng, 3, 3, channels, channels)
    first = relu(_conv_nhwc(x, w1))
    k1 = spread_shift(first)
    h1 = requantize(first, k1)
    second = _conv_nhwc(h1, w2)
    k2 = spread_shift(second)
    h2 = requantize(second, k2)
    total = relu(wrap_int32(h2.astype(np.int64) + x.astype(np.int64)))
    k3 = spread_shift(total)
    out = requantize(total, k3)
    body = f"""
; A ResNet-18 basic block, NHWC {size}x{size}x{channels}, HWIO 3x3 weights, pad 1:
; h1 = requantize{k1}(relu(conv(x, w1)))   ((1,{size},{size},{channels}),()) int8
; h2 = requantize{k2}(conv(h1, w2))        ((1,{size},{size},{channels}),()) int8
; (access-pair h2 x)                       ((1,{size},{size},{channels}),(2)) int8
; compute elementwise-add                  ((1,{size},{size},{channels}),()) int32
; relu; (requantize {k3})
; result: ((1,{size},{size},{channels}),()) int8
(define h1
 (compute (requantize {k1})
  (compute relu
   {CONV.format(w="w1", x="x", c=channels)})))
(define h2
 (compute (requantize {k2})
  {CONV.format(w="w2", x="h1", c=channels)}))
(compute (requantize {k3})
 (compute relu
  (compute elementwise-add (access-pair (access-tensor h2) (access-tensor x)))))
"""
    return dict(body=body, inputs={"x": x, "w1": w1, "w2": w2}, output=out)


def resnet_block_56_int8(rng):
    """ResNet-18 basic block, NHWC 56x56x64: two 3x3 convs, skip add, relu, requantize."""
    return _basic_block(rng, 56, 64)


def resnet_block_28_int8(rng):
    """ResNet-18 basic block, NHWC 28x28x128: two 3x3 convs, skip add, relu, requantize."""
    return _basic_block(rng, 28, 128)


def maxpool3x3s2_112_int8(rng):
    """ResNet's stem max pool: 3x3, stride 2, min-padding 1, NHWC 112x112x64 to 56x56x64."""
    x = int8(rng, 1, 112, 112, 64)
    out = maxpool2d_nchw(x.transpose(0, 3, 1, 2), 3, 2, ((1, 1), (1, 1))).transpose(0, 2, 3, 1)
    return dict(body="""
; access-pad axes 1 and 2 by 1 and 1 with min-padding (-128)   ((1,114,114,64),())
; (access padded 1)                                            ((1),(114,114,64))
; access-windows (shape 3 3 1) (shape 2 2 1)                   ((1,56,56,64),(3,3,1))
; compute reduce-max keeps int8
; result: ((1,56,56,64),()) int8
(compute reduce-max
 (access-windows
  (access
   (access-pad (access-pad (access-tensor x) min-padding 1 1 1) min-padding 2 1 1)
   1)
  (shape 3 3 1)
  (shape 2 2 1)))
""", inputs={"x": x}, output=out)


def global_avgpool_7_int8(rng):
    """ResNet's global pool, NHWC 7x7x512: each channel's 49 pixels summed, requantize 6."""
    x = int8(rng, 1, 7, 7, 512)
    sums = x.astype(np.int64).sum(axis=(1, 2))
    out = requantize(sums, 6)
    return dict(body="""
; an average up to the factor 49/64: requantize-linear's float multiplier (docs/language.md)
; makes it exact; this is the integer pool the store path has had since revision 1
; (access-transpose (access-tensor x) (list 0 3 1 2))   ((1,512,7,7),())
; (access ... 2)                                         ((1,512),(7,7))
; compute reduce-sum                                     ((1,512),()) int32
; (requantize 6)
; result: ((1,512),()) int8
(compute (requantize 6)
 (compute reduce-sum
  (access (access-transpose (access-tensor x) (list 0 3 1 2)) 2)))
""", inputs={"x": x}, output=out)


def attention_qkt_int8(rng):
    """Attention scores Q . K^T, sequence 128, head 64, K stored row-major, int32."""
    q, k = int8(rng, 128, 64), int8(rng, 128, 64)
    return dict(body="""
; (access (access-tensor q) 1)   ((128),(64))
; (access (access-tensor k) 1)   ((128),(64))   each key's row is an item: K^T without a copy
; access-cartesian-product       ((128,128),(2,64))
; result: ((128,128),()) int32
(compute dot-product
 (access-cartesian-product
  (access (access-tensor q) 1)
  (access (access-tensor k) 1)))
""", inputs={"q": q, "k": k}, output=matmul(q, k.T))
