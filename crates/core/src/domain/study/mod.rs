//! Federated studies: what a researcher runs under a permit, its lifecycle, and the rounds and
//! tasks it is made of.
//!
//! A study is parsed once into a [`StudySpec`] (see [`super::study_request`]) and never changes.
//! Its [`StudyStatus`] changes only through the transition methods of [`Study`]; rounds and
//! tasks are plain records written by the round loop, each in the same transaction as the audit
//! entry that records it.

mod dp;
mod lifecycle;
mod release;
mod round;
mod spec;

pub use dp::{epsilon_of_rounds, DpLevel, DpPlan, RoundMechanism, StudyAccountant};
pub use fl_engine::request::Aggregation;
pub use lifecycle::{Study, StudyStatus};
pub use release::{choose_release, ModelRelease, ReleaseChoice};
pub use round::{
    Checkpoint, Round, RoundPhase, RoundReason, RoundRefusal, RoundSummary, SiteContribution,
    SiteEvaluation, Task, TaskKind, TaskReport, TaskStatus,
};
pub use spec::{
    default_test_fraction, DecisionThreshold, OutputCheck, RowLayout, SecureAggregation, StudySpec,
    StudyTask, DEFAULT_TEST_FRACTION, DEFAULT_VALIDATION_FRACTION,
};

// `as_str` and `parse` of the enums that are stored and shown as text.
macro_rules! str_enum {
    ($t:ty { $($v:ident => $s:literal),* $(,)? }) => {
        impl $t {
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$v => $s),* }
            }
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($s => Some(Self::$v),)* _ => None }
            }
        }
    };
}
str_enum!(TaskKind { Fit => "fit", Evaluate => "evaluate" });
str_enum!(DpLevel { Client => "client", Record => "record", NoFormalDp => "none" });
str_enum!(TaskStatus { Pending => "pending", Completed => "completed", Discarded => "discarded", Expired => "expired" });
