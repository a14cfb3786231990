"""Neural-network layers, losses and initializers on ``alloy.core``, with
``mlx.nn``'s API: ``import alloy.nn as nn``."""
from alloy.nn import init, losses  # noqa: F401
from alloy.nn.layers import *  # noqa: F401,F403
from alloy.nn.layers import Module  # noqa: F401
from alloy.nn.utils import average_gradients, value_and_grad  # noqa: F401
