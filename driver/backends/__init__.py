"""Device backends of the driver; ``fpga`` drives a board over its UART host bridge."""
