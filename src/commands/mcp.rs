//! `harnery mcp`: a Model Context Protocol server over stdio (JSON-RPC
//! 2.0, one message a line), built on rmcp. Every rule is in
//! [`harnery::mcp`]; here rmcp lists its tools and hands each call on,
//! on a one-thread runtime, each call's reading on a blocking thread so
//! pings and cancellations are still answered. Stdout carries the
//! protocol only; warnings go to stderr. It ends when the client closes
//! stdin.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

use super::{CmdResult, Outcome};
use harnery::home::Home;
use harnery::mcp::{Answer, CallError, Tools};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Register it with an agent: harnery install claude-code --mcp, or \
                  harnery install copilot --mcp; any other MCP client runs `harnery mcp` \
                  as a stdio server (docs/guide/mcp.md)."
)]
pub struct Args {}

pub fn run(_args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let tools = Arc::new(Tools::new(home)?);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let server = Server {
            tools,
            listed: Arc::new(listed()),
        };
        let running = server.serve(rmcp::transport::stdio()).await?;
        running.waiting().await?;
        Ok::<(), super::CmdError>(())
    })?;
    Ok(Outcome::Clean)
}

/// The tools as `tools/list` gives them.
fn listed() -> Vec<Tool> {
    harnery::mcp::specs()
        .into_iter()
        .map(|s| {
            let mut tool = Tool::new(s.name, s.description, s.input_schema);
            tool.title = Some(s.title.to_string());
            tool.annotations = Some(
                ToolAnnotations::with_title(s.title)
                    .read_only(true)
                    .destructive(false)
                    .idempotent(true),
            );
            tool
        })
        .collect()
}

#[derive(Clone)]
struct Server {
    tools: Arc<Tools>,
    listed: Arc<Vec<Tool>>,
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("harnery", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "harnery's ledger of past agent sessions, read-only: search what was said and \
                 done (search), list and read sessions (sessions, session), tokens and cost \
                 (usage), who touched a file (file_history), checkpoints and what restoring \
                 would give back (checkpoints, restore_plan). Answers are bounded; each says \
                 how to ask for more.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.listed.as_ref().clone(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.listed.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tools = self.tools.clone();
        let name = request.name.to_string();
        let arguments = request.arguments.map(serde_json::Value::Object);
        let answer = tokio::task::spawn_blocking(move || tools.call(&name, arguments))
            .await
            .map_err(|e| {
                ErrorData::internal_error(format!("the call did not finish: {e}"), None)
            })?;
        match answer {
            Ok(Answer { text, structured }) => {
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(structured);
                Ok(result.into())
            }
            Err(e @ CallError::UnknownTool(_)) => {
                Err(ErrorData::invalid_params(e.to_string(), None))
            }
            Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(e.to_string())]).into()),
        }
    }
}
