//! The console's templates, compiled into the binary.

pub const TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("templates/base.html")),
    ("macros.html", include_str!("templates/macros.html")),
    ("error.html", include_str!("templates/error.html")),
    ("login.html", include_str!("templates/login.html")),
    ("dev_login.html", include_str!("templates/dev_login.html")),
    ("signed_in.html", include_str!("templates/signed_in.html")),
    ("home.html", include_str!("templates/home.html")),
    (
        "applications.html",
        include_str!("templates/applications.html"),
    ),
    (
        "application.html",
        include_str!("templates/application.html"),
    ),
    (
        "application_form.html",
        include_str!("templates/application_form.html"),
    ),
    ("permits.html", include_str!("templates/permits.html")),
    ("permit.html", include_str!("templates/permit.html")),
    ("studies.html", include_str!("templates/studies.html")),
    ("study_form.html", include_str!("templates/study_form.html")),
    ("study.html", include_str!("templates/study.html")),
    (
        "study_progress.html",
        include_str!("templates/study_progress.html"),
    ),
    ("audit.html", include_str!("templates/audit.html")),
    (
        "audit_verify.html",
        include_str!("templates/audit_verify.html"),
    ),
    ("records.html", include_str!("templates/records.html")),
    ("statistics.html", include_str!("templates/statistics.html")),
    ("register.html", include_str!("templates/register.html")),
    (
        "statistics_run.html",
        include_str!("templates/statistics_run.html"),
    ),
];
