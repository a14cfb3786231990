"""mx.async_eval."""


def install(mx):
    def async_eval(*args):
        """Evaluates arrays (anywhere in nested lists, tuples and dicts).

        Alloy's evaluation finishes before it returns, so by the time the
        arrays are used they are ready, as MLX promises for async_eval."""
        mx.eval(*args)

    mx.async_eval = async_eval
