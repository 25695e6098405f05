//! The schema's migrations, embedded in the binary.
//!
//! One list names the files of `migrations/sqlite/` and `migrations/postgres/`; the version,
//! description and checksum are derived from each file as sqlx's own directory resolver derives
//! them, so a database migrated by any earlier release (whose binary embedded them through
//! sqlx's `migrate!` macro) sees the same checksums. Building the list here rather than through
//! the macro keeps sqlx's proc-macro crate, and the second copy of every database driver it
//! compiles for the build host, out of the build.

use std::borrow::Cow;

use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::{AssertSqlSafe, SqlSafeStr};

/// `SQLITE` and `POSTGRES`: `(file name, contents)` of every migration of each backend, in
/// version order. The two directories hold the same file names, one per schema change, so the
/// names are listed once.
macro_rules! embed {
    ($($file:literal),+ $(,)?) => {
        const SQLITE: &[(&str, &str)] =
            &[$(($file, include_str!(concat!("../../../../migrations/sqlite/", $file)))),+];
        const POSTGRES: &[(&str, &str)] =
            &[$(($file, include_str!(concat!("../../../../migrations/postgres/", $file)))),+];
    };
}

embed!(
    "0001_governance.sql",
    "0002_studies.sql",
    "0003_audit_log_tree.sql",
    "0004_webhook_cursor.sql",
    "0005_secure_aggregation.sql",
    "0006_audit_tree_in_rows.sql",
    "0007_secagg_masked_sum.sql",
    "0008_secagg_received.sql",
    "0009_optout_match.sql",
    "0010_application_procedure.sql",
    "0011_statistics.sql",
    "0012_catalogue.sql",
    "0013_leases.sql",
);

pub(super) fn sqlite() -> Migrator {
    migrator(SQLITE)
}

pub(super) fn postgres() -> Migrator {
    migrator(POSTGRES)
}

fn migrator(files: &'static [(&'static str, &'static str)]) -> Migrator {
    Migrator::with_migrations(
        files
            .iter()
            .map(|&(name, sql)| migration(name, sql))
            .collect(),
    )
}

/// One file as sqlx's resolver reads it: `<version>_<description>.sql`, underscores of the
/// description read as spaces, and a file that starts with `-- no-transaction` run outside one.
fn migration(file_name: &'static str, sql: &'static str) -> Migration {
    let (version, rest) = file_name
        .split_once('_')
        .unwrap_or_else(|| panic!("migration file {file_name} is not <version>_<name>.sql"));
    let version = version
        .parse()
        .unwrap_or_else(|_| panic!("migration file {file_name} has no integer version"));
    let migration_type = MigrationType::from_filename(rest);
    let description = rest
        .trim_end_matches(migration_type.suffix())
        .replace('_', " ");
    Migration::new(
        version,
        Cow::Owned(description),
        migration_type,
        AssertSqlSafe(sql).into_sql_str(),
        sql.starts_with("-- no-transaction"),
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// What sqlx's resolver, which the `migrate!` macro of earlier releases ran at build time,
    /// reads from a backend's directory.
    fn resolved(backend: &str) -> Vec<Migration> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../migrations")
            .join(backend);
        sqlx::migrate::resolve_blocking(&dir)
            .expect("the migrations directory resolves")
            .into_iter()
            .map(|(migration, _)| migration)
            .collect()
    }

    fn same(embedded: &Migrator, backend: &str) {
        let on_disk = resolved(backend);
        let embedded: Vec<_> = embedded.iter().collect();
        assert_eq!(
            embedded.len(),
            on_disk.len(),
            "every file of migrations/{backend} is embedded, and nothing else"
        );
        for (ours, theirs) in embedded.iter().zip(&on_disk) {
            assert_eq!(ours.version, theirs.version, "{backend}");
            assert_eq!(
                ours.description, theirs.description,
                "{backend} {}",
                ours.version
            );
            assert_eq!(
                ours.migration_type, theirs.migration_type,
                "{backend} {}",
                ours.version
            );
            assert_eq!(ours.no_tx, theirs.no_tx, "{backend} {}", ours.version);
            assert_eq!(
                ours.sql.as_str(),
                theirs.sql.as_str(),
                "{backend} {}",
                ours.version
            );
            assert_eq!(ours.checksum, theirs.checksum, "{backend} {}", ours.version);
        }
    }

    #[test]
    fn the_embedded_sqlite_migrations_are_the_directory_as_sqlx_reads_it() {
        same(&sqlite(), "sqlite");
    }

    #[test]
    fn the_embedded_postgres_migrations_are_the_directory_as_sqlx_reads_it() {
        same(&postgres(), "postgres");
    }

    /// The checksum a database records for the first migration, as recorded by a database
    /// that an earlier release (with the `migrate!` macro) created: SHA-384 of the file.
    #[test]
    fn a_checksum_is_the_sha384_of_the_file() {
        use sha2::{Digest, Sha384};
        let first = sqlite();
        let first = first.iter().next().expect("a first migration");
        assert_eq!(first.version, 1);
        assert_eq!(first.description, "governance");
        assert_eq!(&*first.checksum, Sha384::digest(SQLITE[0].1).as_slice());
    }
}
