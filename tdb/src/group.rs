//! `tdb group create|add|remove|list`: groups and their members (group
//! metadata is `tdb meta`, which takes a group too). Each edit is checked as
//! TileDB checks it and committed as one file; a refused edit writes nothing.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::json;
use tiledb_runtime::array::OpenOptions;
use tiledb_runtime::group::Group;
use tiledb_runtime::storage::{LocalStorage, Storage};
use tiledb_runtime::write::GroupEdit;

use crate::key::KeyArgs;
use crate::{output_error, Failure};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Create an empty group (refused where an array or a group already is).
    Create {
        /// The folder (or URL: `s3://bucket/group`, …) of the new group.
        group: PathBuf,
    },
    /// Add an array or a group as a member.
    Add {
        /// The group.
        group: PathBuf,
        /// The member: a path relative to the group (stored relative), or with
        /// --absolute any path (stored as its absolute file:// URI) or URL
        /// (stored as given).
        member: String,
        /// The member's name (without one, it is known by its URI).
        #[arg(long)]
        name: Option<String>,
        /// Store the member by its absolute URI; MEMBER is then relative to
        /// the working folder or absolute.
        #[arg(long)]
        absolute: bool,
        /// The details file's timestamp (milliseconds since 1970; default now).
        #[arg(long)]
        timestamp: Option<u64>,
        #[command(flatten)]
        key: KeyArgs,
    },
    /// Remove members, each by name or by stored URI.
    Remove {
        /// The group.
        group: PathBuf,
        /// Names or URIs of members.
        #[arg(required = true)]
        members: Vec<String>,
        /// The details file's timestamp (milliseconds since 1970; default now).
        #[arg(long)]
        timestamp: Option<u64>,
        #[command(flatten)]
        key: KeyArgs,
    },
    /// List the members (name, URI, type) and the metadata.
    List {
        /// The group.
        group: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        key: KeyArgs,
    },
}

/// An absolute member's URI as stored and its storage: a URL as given
/// (`s3://bucket/array`), a local path as its absolute `file://` URI.
fn absolute_member(member: &str) -> Result<(String, Box<dyn Storage>), Failure> {
    if crate::location::is_remote(Path::new(member)) {
        return Ok((
            member.to_owned(),
            crate::location::storage(Path::new(member))?,
        ));
    }
    let path = std::path::absolute(member).map_err(|e| format!("{member}: {e}"))?;
    let uri = format!("file://{}", path.display());
    Ok((uri, Box::new(LocalStorage::new(&path))))
}

fn options(key: &KeyArgs) -> Result<OpenOptions, String> {
    Ok(OpenOptions {
        key: key.resolve()?,
        ..OpenOptions::default()
    })
}

/// Opens the group at `group` for an edit of its members, makes `change`
/// and commits it at `timestamp` (now when `None`): one file, or nothing
/// when any step is refused. Errors name the group.
fn edit_members(
    group: &Path,
    key: &KeyArgs,
    timestamp: Option<u64>,
    change: impl FnOnce(&mut GroupEdit<'_>) -> tiledb_runtime::Result<()>,
) -> Result<(), Failure> {
    let at = |e: tiledb_runtime::Error| format!("{}: {e}", group.display());
    let storage = crate::location::storage(group)?;
    let mut edit = Group::edit(storage.as_ref(), &options(key)?).map_err(at)?;
    change(&mut edit).map_err(at)?;
    edit.commit(timestamp.unwrap_or(0)).map_err(at)?;
    Ok(())
}

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    match args.action {
        Action::Create { group } => {
            Group::create(crate::location::storage(&group)?.as_ref())
                .map_err(|e| format!("{}: {e}", group.display()))?;
        }
        Action::Add {
            group,
            member,
            name,
            absolute,
            timestamp,
            key,
        } => {
            let absolute = if absolute {
                Some(absolute_member(&member)?)
            } else {
                None
            };
            edit_members(&group, &key, timestamp, |edit| match &absolute {
                Some((uri, target)) => edit
                    .add_absolute(uri, name.as_deref(), target.as_ref())
                    .map(drop),
                None => edit.add_relative(&member, name.as_deref()).map(drop),
            })?;
        }
        Action::Remove {
            group,
            members,
            timestamp,
            key,
        } => {
            edit_members(&group, &key, timestamp, |edit| {
                members.iter().try_for_each(|m| edit.remove(m).map(drop))
            })?;
        }
        Action::List { group, json, key } => {
            let g = crate::location::open_group(&group, options(&key)?)?;
            let mut out = std::io::stdout().lock();
            if json {
                let doc = json!({
                    "members": g.members().iter().map(|m| json!({
                        "name": m.name_set.then_some(&m.name),
                        "uri": m.uri,
                        "relative": m.relative,
                        "type": if m.is_array { "array" } else { "group" },
                    })).collect::<Vec<_>>(),
                    "metadata": crate::info::metadata_json(g.metadata()),
                });
                writeln!(out, "{doc}").map_err(output_error)?;
            } else {
                for m in g.members() {
                    let kind = if m.is_array { "array" } else { "group" };
                    let place = if m.relative { "relative" } else { "absolute" };
                    writeln!(out, "{}\t{kind}\t{place}\t{}", m.name, m.uri)
                        .map_err(output_error)?;
                }
                let meta = g.metadata();
                if !meta.entries.is_empty() {
                    writeln!(out, "{} metadata key(s)", meta.entries.len())
                        .map_err(output_error)?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
