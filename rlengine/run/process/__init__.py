"""The process a run lives in: TensorFlow's thread pools and devices sized before the first op
(``runtime``), the memory a run asks for checked against the machine (``memory``), SIGINT and
SIGTERM turned into a clean stop (``signals``), the lines a run prints as it starts
(``startup``), and the custom gradients TensorFlow kept of a run released when it ends
(``custom_gradients``)."""
