"""One module per estimator: the `CreditAssigner` subclass, its coefficients and epilogue
(torch backend), its reference binding and the Triton kernel it binds."""
