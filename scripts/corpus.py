"""The corpus: one maker per program in programs/, with its seed (scripts/gen_programs.py writes
them).

A maker takes a seeded generator and returns the program's Glenside body (with a comment deriving
its access-pattern shapes, ending in its ``; result:`` line), its named inputs and its expected
output, computed with the plain numpy of reference_numerics.py, never with glc.
"""

from __future__ import annotations

import numpy as np
from corpus_layers import (
    attention_qkt_int8,
    global_avgpool_7_int8,
    maxpool3x3s2_112_int8,
    resnet_block_28_int8,
    resnet_block_56_int8,
)
from reference_numerics import (
    conv2d_nchw,
    matmul,
    maxpool2d_nchw,
    relu,
    requantize,
    softmax,
    wrap_int32,
)


def int8(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """int8 uniform over the whole range [-128, 127]."""
    return rng.integers(-128, 127, size=shape, dtype=np.int8, endpoint=True)


def matmul_int8(rng):
    """Matrix product of int8 12x20 and 20x7 by Glenside's matmul idiom, int32 result."""
    a, b = int8(rng, 12, 20), int8(rng, 20, 7)
    return dict(body="""
; (access (access-tensor a) 1)                      ((12),(20))
; (access-transpose (access-tensor b) (list 1 0))   ((7,20),())   split kept at 2
; (access ... 1)                                    ((7),(20))
; access-cartesian-product                          ((12,7),(2,20))
; result: ((12,7),()) int32
(compute dot-product
 (access-cartesian-product
  (access (access-tensor a) 1)
  (access (access-transpose (access-tensor b) (list 1 0)) 1)))
""", inputs={"a": a, "b": b}, output=matmul(a, b))


def dense_int8(rng):
    """Dense layer x . w^T, int8 weights stored out x in (no transpose), int32 result."""
    x, w = int8(rng, 4, 32), int8(rng, 16, 32)
    return dict(body="""
; (access (access-tensor x) 1)   ((4),(32))
; (access (access-tensor w) 1)   ((16),(32))   rows of w are already the items: no transpose
; access-cartesian-product       ((4,16),(2,32))
; result: ((4,16),()) int32
(compute dot-product
 (access-cartesian-product
  (access (access-tensor x) 1)
  (access (access-tensor w) 1)))
""", inputs={"x": x, "w": w}, output=matmul(x, w.T))


def mlp_int8(rng):
    """Two int8 dense layers with relu and requantize 7 between them, int32 result."""
    x, w1, w2 = int8(rng, 8, 32), int8(rng, 16, 32), int8(rng, 10, 16)
    wide = matmul(x, w1.T)
    hidden = requantize(relu(wide), 7)
    # The data must exercise requantize: saturation, and round-half-up changing the result.
    unsaturated = (hidden > 0) & (hidden < 127)
    rounds_up = ((wide.astype(np.int64) >> 7) != hidden) & unsaturated
    assert (hidden == 127).any() and unsaturated.any() and rounds_up.any()
    return dict(body="""
; hidden:    x ((8),(32)) x w1 ((16),(32)) -> cartesian ((8,16),(2,32)) -> dot ((8,16),()) int32
;            relu keeps int32
; quantized: (requantize 7) -> ((8,16),()) int8
; (access quantized 1) ((8),(16)) x w2 ((10),(16)) -> cartesian ((8,10),(2,16))
; result: ((8,10),()) int32
(define hidden
 (compute relu
  (compute dot-product
   (access-cartesian-product
    (access (access-tensor x) 1)
    (access (access-tensor w1) 1)))))
(define quantized (compute (requantize 7) hidden))
(compute dot-product
 (access-cartesian-product
  (access quantized 1)
  (access (access-tensor w2) 1)))
""", inputs={"x": x, "w1": w1, "w2": w2}, output=matmul(hidden, w2.T))


def conv2d_nchw_int8(rng):
    """Conv2d, int8 NCHW data and OIHW weights, 3x3, pad 1, stride 1, int32 NCHW result."""
    data, weights = int8(rng, 1, 4, 8, 8), int8(rng, 6, 4, 3, 3)
    return dict(body="""
; access-pad axes 2 and 3 by 1 and 1   ((1,4,10,10),())
; (access padded 1)                    ((1),(4,10,10))
; access-windows (shape 4 3 3) (shape 1 1 1)
;                                      ((1,1,8,8),(4,3,3))   C window position has size 1
; access-squeeze axis 1                ((1,8,8),(4,3,3))
; (access ... 3)                       ((1,8,8),(4,3,3))
; (access (access-tensor weights) 1)   ((6),(4,3,3))
; access-cartesian-product             ((6,1,8,8),(2,4,3,3))
; compute dot-product                  ((6,1,8,8),())
; access-transpose (list 1 0 2 3)      NCHW
; result: ((1,6,8,8),()) int32
(access-transpose
 (compute dot-product
  (access-cartesian-product
   (access (access-tensor weights) 1)
   (access
    (access-squeeze
     (access-windows
      (access
       (access-pad (access-pad (access-tensor data) zero-padding 2 1 1) zero-padding 3 1 1)
       1)
      (shape 4 3 3)
      (shape 1 1 1))
     1)
    3)))
 (list 1 0 2 3))
""", inputs={"data": data, "weights": weights},
                output=conv2d_nchw(data, weights, (1, 1), ((1, 1), (1, 1))))


def conv2d_stride2_asym_int8(rng):
    """Conv2d, int8 NCHW/OIHW, 3x3, stride 2, pad top 0 bottom 1 left 1 right 2, int32."""
    data, weights = int8(rng, 1, 3, 9, 10), int8(rng, 5, 3, 3, 3)
    out = conv2d_nchw(data, weights, (2, 2), ((0, 1), (1, 2)))
    return dict(body="""
; access-pad axis 2 by 0 and 1, axis 3 by 1 and 2   ((1,3,10,13),())
; (access padded 1)                                 ((1),(3,10,13))
; access-windows (shape 3 3 3) (shape 1 2 2)        w = (1, (10-3)//2+1, (13-3)//2+1)
;                                                   ((1,1,4,6),(3,3,3))
; access-squeeze axis 1, (access ... 3)             ((1,4,6),(3,3,3))
; (access (access-tensor weights) 1)                ((5),(3,3,3))
; access-cartesian-product                          ((5,1,4,6),(2,3,3,3))
; compute dot-product                               ((5,1,4,6),())
; access-transpose (list 1 0 2 3)                   NCHW
; result: ((1,5,4,6),()) int32
(access-transpose
 (compute dot-product
  (access-cartesian-product
   (access (access-tensor weights) 1)
   (access
    (access-squeeze
     (access-windows
      (access
       (access-pad (access-pad (access-tensor data) zero-padding 2 0 1) zero-padding 3 1 2)
       1)
      (shape 3 3 3)
      (shape 1 2 2))
     1)
    3)))
 (list 1 0 2 3))
""", inputs={"data": data, "weights": weights}, output=out)


def conv2d_nhwc_hwio_int8(rng):
    """Conv2d, int8 NHWC data and HWIO weights via transposes, 3x3, pad 1, int32 NHWC."""
    data, weights = int8(rng, 1, 8, 8, 4), int8(rng, 3, 3, 4, 6)
    nchw = conv2d_nchw(data.transpose(0, 3, 1, 2), weights.transpose(3, 2, 0, 1), (1, 1),
                       ((1, 1), (1, 1)))
    return dict(body="""
; access-pad axes 1 and 2 (H, W) by 1 and 1       ((1,10,10,4),())
; access-transpose (list 0 3 1 2)                 NCHW ((1,4,10,10),())
; (access ... 1)                                  ((1),(4,10,10))
; access-windows (shape 4 3 3) (shape 1 1 1)      ((1,1,8,8),(4,3,3))
; access-squeeze axis 1, (access ... 3)           ((1,8,8),(4,3,3))
; weights HWIO (3,3,4,6), transpose (list 3 2 0 1) -> OIHW ((6,4,3,3),())
; (access ... 1)                                  ((6),(4,3,3))
; access-cartesian-product                        ((6,1,8,8),(2,4,3,3))
; compute dot-product                             ((6,1,8,8),())   dims O N H W
; access-transpose (list 1 2 3 0)                 NHWC
; result: ((1,8,8,6),()) int32
(access-transpose
 (compute dot-product
  (access-cartesian-product
   (access (access-transpose (access-tensor weights) (list 3 2 0 1)) 1)
   (access
    (access-squeeze
     (access-windows
      (access
       (access-transpose
        (access-pad (access-pad (access-tensor data) zero-padding 1 1 1) zero-padding 2 1 1)
        (list 0 3 1 2))
       1)
      (shape 4 3 3)
      (shape 1 1 1))
     1)
    3)))
 (list 1 2 3 0))
""", inputs={"data": data, "weights": weights}, output=nchw.transpose(0, 2, 3, 1))


def conv1d_int8(rng):
    """Conv1d, int8 NCW data and OIW weights, width 3, no padding, int32 NCW result."""
    data, weights = int8(rng, 1, 4, 16), int8(rng, 5, 4, 3)
    out = conv2d_nchw(data[:, :, None, :], weights[:, :, None, :], (1, 1), ((0, 0), (0, 0)))
    return dict(body="""
; (access (access-tensor data) 1)              ((1),(4,16))
; access-windows (shape 4 3) (shape 1 1)       ((1,1,14),(4,3))
; access-squeeze axis 1, (access ... 2)        ((1,14),(4,3))
; (access (access-tensor weights) 1)           ((5),(4,3))
; access-cartesian-product                     ((5,1,14),(2,4,3))
; compute dot-product                          ((5,1,14),())
; access-transpose (list 1 0 2)                NCW
; result: ((1,5,14),()) int32
(access-transpose
 (compute dot-product
  (access-cartesian-product
   (access (access-tensor weights) 1)
   (access
    (access-squeeze
     (access-windows (access (access-tensor data) 1) (shape 4 3) (shape 1 1))
     1)
    2)))
 (list 1 0 2))
""", inputs={"data": data, "weights": weights}, output=out[:, :, 0, :])


def maxpool2x2_int8(rng):
    """2x2 max pool, stride 2, int8, min-padding bottom and right so 7 -> 8 -> 4."""
    data = int8(rng, 1, 3, 7, 7)
    return dict(body="""
; access-pad axes 2 and 3 by 0 and 1 with min-padding (-128)   ((1,3,8,8),())
; (access padded 2)                                            ((1,3),(8,8))
; access-windows (shape 2 2) (shape 2 2)                       ((1,3,4,4),(2,2))
; compute reduce-max keeps int8
; result: ((1,3,4,4),()) int8
(compute reduce-max
 (access-windows
  (access
   (access-pad (access-pad (access-tensor data) min-padding 2 0 1) min-padding 3 0 1)
   2)
  (shape 2 2)
  (shape 2 2)))
""", inputs={"data": data}, output=maxpool2d_nchw(data, 2, 2, ((0, 1), (0, 1))))


def conv2d_nchw_oihw(rng):
    """Conv2d, float64 NCHW/OIHW, 3x3, pad 1: plain Glenside, no declarations."""
    activations = rng.standard_normal((1, 3, 32, 32))
    weights = rng.standard_normal((8, 3, 3, 3))
    out = conv2d_nchw(activations, weights, (1, 1), ((1, 1), (1, 1)))
    return dict(body="""
; access-pad axes 2 and 3 by 1 and 1                ((1,3,34,34),())
; (access padded 0)                                 ((),(1,3,34,34))
; access-windows (shape 1 3 3 3) (shape 1 1 1 1)    ((1,1,32,32),(1,3,3,3))
; access-squeeze axis 4 (the item's N dim)          ((1,1,32,32),(3,3,3))
; access-squeeze axis 1 (the C window position)     ((1,32,32),(3,3,3))
; (access ... 3), weights ((8),(3,3,3))
; access-cartesian-product                          ((8,1,32,32),(2,3,3,3))
; compute dot-product                               ((8,1,32,32),())
; access-transpose (list 1 0 2 3)                   NCHW
; result: ((1,8,32,32),()) float64
(access-transpose
 (compute dot-product
  (access-cartesian-product
   (access (access-tensor weights) 1)
   (access
    (access-squeeze
     (access-squeeze
      (access-windows
       (access
        (access-pad (access-pad (access-tensor activations) zero-padding 2 1 1)
                    zero-padding 3 1 1)
        0)
       (shape 1 3 3 3)
       (shape 1 1 1 1))
      4)
     1)
    3)))
 (list 1 0 2 3))
""", inputs={"activations": activations, "weights": weights}, output=out, declare=False)


def residual_add_int8(rng):
    """Residual x + requantize7(x . w^T): access-pair and elementwise-add, int32."""
    x, w = int8(rng, 4, 16), int8(rng, 16, 16)
    block = requantize(matmul(x, w.T), 7)
    return dict(body="""
; block: x ((4),(16)) x w ((16),(16)) -> dot ((4,16),()) int32 -> (requantize 7) int8
; (access-tensor x)          ((4,16),()) int8
; access-pair block x        ((4,16),(2))
; compute elementwise-add    sums the pair in int32
; result: ((4,16),()) int32
(define block
 (compute (requantize 7)
  (compute dot-product
   (access-cartesian-product
    (access (access-tensor x) 1)
    (access (access-tensor w) 1)))))
(compute elementwise-add (access-pair block (access-tensor x)))
""", inputs={"x": x, "w": w}, output=wrap_int32(block.astype(np.int64) + x))


def dense_bias_int8(rng):
    """Dense layer plus an int32 bias broadcast over the rows, int32 result."""
    x, w = int8(rng, 4, 32), int8(rng, 16, 32)
    bias = rng.integers(-(2**15), 2**15, size=16, dtype=np.int32)
    out = wrap_int32(matmul(x, w.T).astype(np.int64) + bias[None, :])
    return dict(body="""
; (access dense 1)                      ((4),(16)) int32
; bias ((16),()), access-insert-axis 0  ((1,16),()), (access ... 1) ((1),(16))
; access-broadcast to (4)(16)           ((4),(16))
; access-pair                           ((4),(2,16))
; compute elementwise-add               folds the pair axis
; result: ((4),(16)) int32
(define dense
 (compute dot-product
  (access-cartesian-product
   (access (access-tensor x) 1)
   (access (access-tensor w) 1))))
(compute elementwise-add
 (access-pair
  (access dense 1)
  (access-broadcast
   (access (access-insert-axis (access-tensor bias) 0) 1)
   (access-shape (shape 4) (shape 16)))))
""", inputs={"x": x, "w": w, "bias": bias}, output=out)


def reduce_sum_int8(rng):
    """Row sums of an int8 matrix by reduce-sum, int32 result."""
    x = int8(rng, 6, 20)
    return dict(body="""
; (access (access-tensor x) 1)   ((6),(20))
; result: ((6),()) int32
(compute reduce-sum (access (access-tensor x) 1))
""", inputs={"x": x}, output=wrap_int32(x.astype(np.int64).sum(axis=1)))


def concat_slice_int8(rng):
    """Columns 2..8 of [a, b] by access-concatenate and access-slice, int8."""
    a, b = int8(rng, 4, 6), int8(rng, 4, 5)
    return dict(body="""
; access-concatenate a ((4,6),()) and b ((4,5),()) on axis 1   ((4,11),())
; access-slice axis 1 from 2 to 9
; result: ((4,7),()) int8
(access-slice (access-concatenate (access-tensor a) (access-tensor b) 1) 1 2 9)
""", inputs={"a": a, "b": b}, output=np.concatenate([a, b], axis=1)[:, 2:9])


def mul_wrap_int32(rng):
    """Elementwise int32 product that wraps in two's complement."""
    a = rng.integers(-(2**31), 2**31, size=(3, 5), dtype=np.int32)
    b = rng.integers(-(2**31), 2**31, size=(3, 5), dtype=np.int32)
    out = wrap_int32(a.astype(np.int64) * b)
    assert (out.astype(np.int64) != a.astype(np.int64) * b).all(), "every product should wrap"
    return dict(body="""
; access-pair (access-tensor a) (access-tensor b)   ((3,5),(2))
; compute elementwise-mul                           products mod 2^32
; result: ((3,5),()) int32
(compute elementwise-mul (access-pair (access-tensor a) (access-tensor b)))
""", inputs={"a": a, "b": b}, output=out)


def softmax_f64(rng):
    """Softmax of each row of a float64 matrix."""
    x = rng.standard_normal((5, 9))
    return dict(body="""
; (access (access-tensor x) 1)   ((5),(9))
; result: ((5),(9)) float64
(compute softmax (access (access-tensor x) 1))
""", inputs={"x": x}, output=softmax(x, axis=1))


def cnn_int8(rng):
    """Tiny CNN: conv2d, relu, requantize 8, 2x2 max pool, flatten, dense; int32 result."""
    data, filters, w = int8(rng, 1, 2, 6, 6), int8(rng, 4, 2, 3, 3), int8(rng, 5, 36)
    wide = relu(conv2d_nchw(data, filters, (1, 1), ((1, 1), (1, 1))))
    features = requantize(wide, 8)
    assert (features == 127).any() and ((features > 0) & (features < 127)).any()
    pooled = maxpool2d_nchw(features, 2, 2, ((0, 0), (0, 0)))
    return dict(body="""
; features: conv2d idiom, pad 1   ((1,4,6,6),()) int32; relu; (requantize 8) int8
; (access features 2)             ((1,4),(6,6))
; access-windows (shape 2 2) (shape 2 2), reduce-max -> pooled ((1,4,3,3),()) int8
; (access pooled 1)               ((1),(4,3,3))
; access-flatten                  ((1),(36))      row-major, as numpy's reshape
; (access (access-tensor w) 1)    ((5),(36))
; access-cartesian-product        ((1,5),(2,36))
; result: ((1,5),()) int32
(define features
 (compute (requantize 8)
  (compute relu
   (access-transpose
    (compute dot-product
     (access-cartesian-product
      (access (access-tensor filters) 1)
      (access
       (access-squeeze
        (access-windows
         (access
          (access-pad (access-pad (access-tensor data) zero-padding 2 1 1) zero-padding 3 1 1)
          1)
         (shape 2 3 3)
         (shape 1 1 1))
        1)
       3)))
    (list 1 0 2 3)))))
(define pooled
 (compute reduce-max (access-windows (access features 2) (shape 2 2) (shape 2 2))))
(compute dot-product
 (access-cartesian-product
  (access-flatten (access pooled 1))
  (access (access-tensor w) 1)))
""", inputs={"data": data, "filters": filters, "w": w},
                output=matmul(pooled.reshape(1, 36), w.T))


def gemm256_int8(rng):
    """The architecture's GEMM: int8 256x256 times 256x256 by the matmul idiom, int32 result."""
    a, b = int8(rng, 256, 256), int8(rng, 256, 256)
    return dict(body="""
; (access (access-tensor a) 1)                      ((256),(256))
; (access-transpose (access-tensor b) (list 1 0))   ((256,256),())
; (access ... 1)                                    ((256),(256))
; access-cartesian-product                          ((256,256),(2,256))
; result: ((256,256),()) int32
(compute dot-product
 (access-cartesian-product
  (access (access-tensor a) 1)
  (access (access-transpose (access-tensor b) (list 1 0)) 1)))
""", inputs={"a": a, "b": b}, output=matmul(a, b))


def conv2d_nhwc64_int8(rng):
    """The architecture's conv layer: NHWC 32x32x64, HWIO 3x3x64x64, pad 1, relu, requantize 12."""
    data, weights = int8(rng, 1, 32, 32, 64), int8(rng, 3, 3, 64, 64)
    nchw = conv2d_nchw(data.transpose(0, 3, 1, 2), weights.transpose(3, 2, 0, 1), (1, 1),
                       ((1, 1), (1, 1)))
    out = requantize(relu(nchw.transpose(0, 2, 3, 1)), 12)
    assert (out == 127).any() and ((out > 0) & (out < 127)).mean() > 0.2
    return dict(body="""
; the conv2d-nhwc-hwio-int8 idiom at 32x32, 64 -> 64 channels:
; (access ... 1) of the NCHW view of the padded image  ((1),(64,34,34))
; access-windows (shape 64 3 3) (shape 1 1 1)          ((1,1,32,32),(64,3,3))
; access-squeeze axis 1, (access ... 3)                ((1,32,32),(64,3,3))
; weights HWIO -> OIHW, (access ... 1)                 ((64),(64,3,3))
; compute dot-product                                  ((64,1,32,32),())   dims O N H W
; access-transpose (list 1 2 3 0)                      NHWC ((1,32,32,64),()) int32
; relu; (requantize 12)
; result: ((1,32,32,64),()) int8
(compute (requantize 12)
 (compute relu
  (access-transpose
   (compute dot-product
    (access-cartesian-product
     (access (access-transpose (access-tensor weights) (list 3 2 0 1)) 1)
     (access
      (access-squeeze
       (access-windows
        (access
         (access-transpose
          (access-pad (access-pad (access-tensor data) zero-padding 1 1 1) zero-padding 2 1 1)
          (list 0 3 1 2))
         1)
        (shape 64 3 3)
        (shape 1 1 1))
       1)
      3)))
   (list 1 2 3 0))))
""", inputs={"data": data, "weights": weights}, output=out)


# Each program's maker with its fixed seed; the order is the README's. A maker's name, with
# dashes, is the program's name and its docstring the program's summary.
MAKERS = [
    (matmul_int8, 101), (dense_int8, 102), (mlp_int8, 103), (conv2d_nchw_int8, 104),
    (conv2d_stride2_asym_int8, 105), (conv2d_nhwc_hwio_int8, 106), (conv1d_int8, 107),
    (maxpool2x2_int8, 108), (conv2d_nchw_oihw, 109), (residual_add_int8, 110),
    (dense_bias_int8, 111), (reduce_sum_int8, 112), (concat_slice_int8, 113),
    (mul_wrap_int32, 114), (softmax_f64, 115), (cnn_int8, 116), (gemm256_int8, 117),
    (conv2d_nhwc64_int8, 118), (resnet_block_56_int8, 119), (resnet_block_28_int8, 120),
    (maxpool3x3s2_112_int8, 121), (global_avgpool_7_int8, 122),
    (attention_qkt_int8, 123),
]
