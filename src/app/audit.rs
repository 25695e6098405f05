//! Audit-trail services shared by `GET /v1/audit/verify` and `ehds-gateway audit verify`.

use crate::{
    domain::audit::{ChainVerifier, VerifyReport},
    store::{AuditFilter, Tx},
};

/// Entries per page of a verification: audit rows are bounded in size (docs/security.md), so a
/// page is at most a few MB whatever the trail's length.
const VERIFY_PAGE: i64 = 500;

/// Verifies the whole hash chain. Walks it page by page, so memory stays flat however long the
/// trail is.
#[tracing::instrument(name = "Verifying the audit chain", skip_all)]
pub async fn verify_chain(tx: &mut dyn Tx) -> crate::store::Result<VerifyReport> {
    let mut verifier = ChainVerifier::default();
    let mut after = 0;
    loop {
        let page = tx
            .list_audit(&AuditFilter {
                after_seq: Some(after),
                limit: VERIFY_PAGE,
                ..Default::default()
            })
            .await?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        if !page.iter().all(|e| verifier.feed(e)) {
            break;
        }
    }
    Ok(verifier.finish())
}
