//! The application's fixed names for the managed sandbox slot: where its
//! bindings live and the metadata keys the reconciler owns (pure Rust). Both
//! `input` and `rules` read them; neither imports the other's constants.

/// The binding slot in `built_in_managed_resources`.
pub const BUNDLE_KEY: &str = "managed-sandbox-environment";
pub const RESOURCE_KIND: &str = "environment";
pub const RESOURCE_KEY: &str = "managed-sandbox";
pub const DEFAULT_STOCK_VERSION: &str = "managed-environment-v1";

/// The three markers every managed row's metadata carries (the key set's base).
pub const MANAGED_BY_KEY: &str = "managedByPaperclip";
pub const PROVIDER_KEY: &str = "managedSandboxProvider";
pub const KUBERNETES_MARKER: &str = "managedKubernetesSandbox";
/// Stored in the row's metadata and in each binding's defaults; never hashed.
pub const ARCHIVE_TOKEN_KEY: &str = "_paperclipManagedArchiveToken";
