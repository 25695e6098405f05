//! The node protocol, as a data holder speaks it: long-poll for tasks, ask which subjects
//! have opted out, download the global model, return the result.

use fl_engine::FitIns;

use super::{Call, ClientError, GatewayClient};
use ehds_core::{
    domain::TaskId,
    secure_aggregation::{NodeMessage, SecaggView},
    wire::{decode_fit_ins, FilterRequest, FilterResponse, NodeTask, TaskResultBody},
};

/// How a result reached the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Accepted,
    /// The gateway already holds this task's result: an earlier attempt got through before
    /// its answer was lost.
    AlreadyAccepted,
}

impl GatewayClient {
    /// The caller's pending tasks, waiting up to `wait_seconds` for one to appear.
    pub async fn poll_tasks(&self, wait_seconds: u64) -> Result<Vec<NodeTask>, ClientError> {
        self.send_json(Call::get(format!("/v1/node/tasks?wait={wait_seconds}")))
            .await
    }

    /// The global model `task` trains or evaluates, checked to be this task's (study, round).
    pub async fn task_parameters(&self, task: &NodeTask) -> Result<FitIns, ClientError> {
        let call = Call::get(format!("/v1/node/tasks/{}/parameters", task.task_id));
        let what = call.what();
        let answer = self.send(call).await?;
        decode_fit_ins(&answer.body, task.study_id, task.round)
            .map_err(|e| ClientError::decode(what, e))
    }

    /// Which of the holder's subjects the permit excludes (Art. 71).
    pub async fn filter_opt_outs(
        &self,
        request: &FilterRequest,
    ) -> Result<FilterResponse, ClientError> {
        self.send_json(Call::post("/v1/opt-outs/filter").json(request)?)
            .await
    }

    /// Returns a task's result. A result the gateway already holds counts as delivered.
    pub async fn submit_result(
        &self,
        task: TaskId,
        body: &TaskResultBody,
    ) -> Result<Delivery, ClientError> {
        let call = Call::post(format!("/v1/node/tasks/{task}/result")).json(body)?;
        match self.send(call).await {
            Ok(_) => Ok(Delivery::Accepted),
            Err(e) if e.code() == Some("task_already_completed") => Ok(Delivery::AlreadyAccepted),
            Err(e) => Err(e),
        }
    }

    /// Where the secure aggregation of a task's round stands for this holder; with
    /// `wait_seconds`, the gateway holds the answer until the holder is awaited or the stage
    /// moves on (long poll).
    pub async fn secagg_view(
        &self,
        task: TaskId,
        wait_seconds: u64,
    ) -> Result<SecaggView, ClientError> {
        self.send_json(Call::get(format!(
            "/v1/node/tasks/{task}/secagg?wait={wait_seconds}"
        )))
        .await
    }

    /// Hands a protocol message to the gateway's relay. A message the relay already holds
    /// (a retry after a lost answer) counts as delivered.
    pub async fn secagg_submit(
        &self,
        task: TaskId,
        message: &NodeMessage,
    ) -> Result<Delivery, ClientError> {
        let call = Call::post(format!("/v1/node/tasks/{task}/secagg")).json(message)?;
        match self.send(call).await {
            Ok(_) => Ok(Delivery::Accepted),
            Err(e) if e.code() == Some("secagg_message_replayed") => Ok(Delivery::AlreadyAccepted),
            Err(e) => Err(e),
        }
    }
}
