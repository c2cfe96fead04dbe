//! Which of the two registrations a macro call is, and how messages name it.

/// Which of the two levels a registration is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `#[op_estimator]`: `fn(&OpInvokeInfo, &DeviceProfile) -> Estimate`.
    Estimator,
    /// `#[op_properties]`: `fn(&OpInvokeInfo) -> PerformanceProperties`.
    Properties,
}

impl Kind {
    /// The attribute's name, for messages.
    pub(super) fn attribute(self) -> &'static str {
        match self {
            Kind::Estimator => "op_estimator",
            Kind::Properties => "op_properties",
        }
    }

    /// The signature the function must have, for messages.
    pub(super) fn signature(self) -> &'static str {
        match self {
            Kind::Estimator => "fn(info: &OpInvokeInfo, device: &DeviceProfile) -> Estimate",
            Kind::Properties => "fn(info: &OpInvokeInfo) -> PerformanceProperties",
        }
    }
}
