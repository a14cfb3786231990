from alloy.nn.layers.activations import (  # noqa: F401  (names with no __all__)
    CELU, ELU, GELU, GLU, SELU, HardShrink, HardTanh, Hardswish, LeakyReLU, LogSigmoid, LogSoftmax, Mish, PReLU,
    ReLU, ReLU2, ReLU6, Sigmoid, SiLU, Softmax, Softmin, Softplus, Softshrink, Softsign, Step, Tanh, celu, elu,
    gelu, gelu_approx, gelu_fast_approx, glu, hard_shrink, hard_tanh, hardswish, leaky_relu, log_sigmoid,
    log_softmax, mish, prelu, relu, relu2, relu6, selu, sigmoid, silu, softmax, softmin, softplus, softshrink,
    softsign, step, tanh,
)
from alloy.nn.layers.base import Module  # noqa: F401
from alloy.nn.layers.containers import Sequential  # noqa: F401
from alloy.nn.layers.convolution import Conv1d, Conv2d, Conv3d  # noqa: F401
from alloy.nn.layers.convolution_transpose import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: F401
from alloy.nn.layers.distributed import (  # noqa: F401
    AllToShardedLinear, FullyShardedModule, QuantizedAllToShardedLinear, QuantizedShardedToAllLinear,
    ShardedToAllLinear, fully_shard,
)
from alloy.nn.layers.dropout import Dropout, Dropout2d, Dropout3d  # noqa: F401
from alloy.nn.layers.embedding import Embedding  # noqa: F401
from alloy.nn.layers.linear import Bilinear, Identity, Linear  # noqa: F401
from alloy.nn.layers.normalization import BatchNorm, GroupNorm, InstanceNorm, LayerNorm, RMSNorm  # noqa: F401
from alloy.nn.layers.pooling import AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d  # noqa: F401
from alloy.nn.layers.positional_encoding import ALiBi, RoPE, SinusoidalPositionalEncoding  # noqa: F401
from alloy.nn.layers.recurrent import GRU, LSTM, RNN  # noqa: F401
from alloy.nn.layers.upsample import Upsample  # noqa: F401
from alloy.nn.layers.quantized import QQLinear, QuantizedEmbedding, QuantizedLinear, quantize  # noqa: F401
from alloy.nn.layers.transformer import (  # noqa: F401
    MultiHeadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
    TransformerEncoderLayer,
)
