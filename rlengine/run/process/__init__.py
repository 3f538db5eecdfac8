"""The process a run lives in: TensorFlow's thread pools and devices sized before the first op
(``runtime``), the memory a run asks for checked against the machine (``memory``), SIGINT and
SIGTERM turned into a clean stop (``signals``), and the lines a run prints as it starts
(``startup``)."""
