//! Authorisation as policy-as-code: every request is decided by the Cedar policies in
//! `policies/`, validated against their schema at start-up.

use std::{
    collections::{HashMap, HashSet},
    str::FromStr,
};

use anyhow::Context;
use cedar_policy::{
    Authorizer as CedarAuthorizer, Context as CedarContext, Decision, Entities, Entity, EntityId,
    EntityTypeName, EntityUid, PolicySet, Request, RestrictedExpression, Schema, ValidationMode,
    Validator,
};

use crate::auth::Principal;
use ehds_core::domain::{
    statistics::StatisticsRun,
    study::{Study, Task},
    Application, Permit,
};

const SCHEMA: &str = include_str!("../../../policies/schema.cedarschema");
const POLICIES: &str = include_str!("../../../policies/gateway.cedar");

pub use ehds_core::domain::action::Action;

/// What an action is performed on.
pub enum Resource<'a> {
    Service,
    Application(&'a Application),
    Permit(&'a Permit),
    Study(&'a Study),
    Task(&'a Task),
    StatisticsRun(&'a StatisticsRun),
    OptOutRegistry,
    AuditLog,
    /// A catalogue dataset, by the organisation that publishes it (or would).
    CatalogueDataset(&'a str),
}

pub struct Authorizer {
    schema: Schema,
    policies: PolicySet,
    cedar: CedarAuthorizer,
}

fn uid(kind: &str, id: &str) -> anyhow::Result<EntityUid> {
    Ok(EntityUid::from_type_name_and_id(
        EntityTypeName::from_str(kind)?,
        EntityId::new(id),
    ))
}

fn string_set<'a>(items: impl Iterator<Item = &'a str>) -> RestrictedExpression {
    RestrictedExpression::new_set(items.map(|s| RestrictedExpression::new_string(s.to_owned())))
}

impl Authorizer {
    pub fn new() -> anyhow::Result<Self> {
        let (schema, warnings) =
            Schema::from_cedarschema_str(SCHEMA).context("Invalid Cedar schema")?;
        for w in warnings {
            tracing::warn!(warning = %w, "Cedar schema warning");
        }
        let policies: PolicySet = POLICIES.parse().context("Invalid Cedar policies")?;
        let result = Validator::new(schema.clone()).validate(&policies, ValidationMode::Strict);
        if !result.validation_passed() {
            let errors: Vec<String> = result.validation_errors().map(|e| e.to_string()).collect();
            anyhow::bail!(
                "Cedar policies do not validate against the schema: {}",
                errors.join("; ")
            );
        }
        Ok(Self {
            schema,
            policies,
            cedar: CedarAuthorizer::new(),
        })
    }

    fn principal_entity(&self, p: &Principal) -> anyhow::Result<Entity> {
        let attrs = HashMap::from([
            (
                "sub".to_owned(),
                RestrictedExpression::new_string(p.sub.clone()),
            ),
            (
                "roles".to_owned(),
                string_set(p.roles.iter().map(|r| r.as_str())),
            ),
            (
                "organisation".to_owned(),
                RestrictedExpression::new_string(
                    p.organisation
                        .as_ref()
                        .map(|o| o.to_string())
                        .unwrap_or_default(),
                ),
            ),
        ]);
        Ok(Entity::new(
            uid("Gateway::User", &p.sub)?,
            attrs,
            HashSet::new(),
        )?)
    }

    fn resource_entity(&self, r: &Resource<'_>) -> anyhow::Result<Entity> {
        Ok(match r {
            Resource::Service => {
                Entity::new_no_attrs(uid("Gateway::Service", "gateway")?, HashSet::new())
            }
            Resource::OptOutRegistry => {
                Entity::new_no_attrs(uid("Gateway::OptOutRegistry", "registry")?, HashSet::new())
            }
            Resource::AuditLog => {
                Entity::new_no_attrs(uid("Gateway::AuditLog", "audit")?, HashSet::new())
            }
            Resource::CatalogueDataset(publisher) => Entity::new(
                uid("Gateway::CatalogueDataset", publisher)?,
                HashMap::from([(
                    "publisher".to_owned(),
                    RestrictedExpression::new_string((*publisher).to_owned()),
                )]),
                HashSet::new(),
            )?,
            Resource::Application(a) => Entity::new(
                uid("Gateway::Application", &a.id.to_string())?,
                HashMap::from([
                    (
                        "organisation".to_owned(),
                        RestrictedExpression::new_string(a.request.organisation.to_string()),
                    ),
                    (
                        "applicant".to_owned(),
                        RestrictedExpression::new_string(a.applicant_sub.clone()),
                    ),
                ]),
                HashSet::new(),
            )?,
            Resource::Study(s) => Entity::new(
                uid("Gateway::Study", &s.id.to_string())?,
                HashMap::from([
                    (
                        "organisation".to_owned(),
                        RestrictedExpression::new_string(s.organisation.to_string()),
                    ),
                    (
                        "researcher".to_owned(),
                        RestrictedExpression::new_string(s.researcher_sub.clone()),
                    ),
                ]),
                HashSet::new(),
            )?,
            Resource::Task(t) => Entity::new(
                uid("Gateway::Task", &t.id.to_string())?,
                HashMap::from([(
                    "data_holder".to_owned(),
                    RestrictedExpression::new_string(t.data_holder.to_string()),
                )]),
                HashSet::new(),
            )?,
            Resource::StatisticsRun(r) => Entity::new(
                uid("Gateway::StatisticsRun", &r.id.to_string())?,
                HashMap::from([(
                    "organisation".to_owned(),
                    RestrictedExpression::new_string(r.organisation.to_string()),
                )]),
                HashSet::new(),
            )?,
            Resource::Permit(p) => Entity::new(
                uid("Gateway::Permit", &p.id().to_string())?,
                HashMap::from([
                    (
                        "organisation".to_owned(),
                        RestrictedExpression::new_string(p.organisation().to_string()),
                    ),
                    (
                        "data_holders".to_owned(),
                        string_set(p.terms().data_holder_ids().map(|h| h.as_str())),
                    ),
                ]),
                HashSet::new(),
            )?,
        })
    }

    /// Decides whether `principal` may perform `action` on `resource`.
    pub fn is_allowed(
        &self,
        principal: &Principal,
        action: Action,
        resource: &Resource<'_>,
    ) -> anyhow::Result<bool> {
        let p = self.principal_entity(principal)?;
        let r = self.resource_entity(resource)?;
        let request = Request::new(
            p.uid(),
            uid("Gateway::Action", action.name())?,
            r.uid(),
            CedarContext::empty(),
            Some(&self.schema),
        )?;
        let entities = Entities::from_entities([p, r], Some(&self.schema))?;
        let response = self
            .cedar
            .is_authorized(&request, &self.policies, &entities);
        Ok(response.decision() == Decision::Allow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_policies_validate_against_the_schema() {
        Authorizer::new().expect("policies validate");
    }

    #[test]
    fn a_request_is_audited_under_its_action_name() {
        use ehds_core::domain::audit::AuditAction;
        let all = Action::ALL;
        for a in all {
            assert_eq!(AuditAction::from(a).as_str(), a.name());
        }
    }
}
