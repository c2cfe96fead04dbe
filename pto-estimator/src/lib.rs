//! Performance models of pto-op operators: the estimator registry and the roofline.
