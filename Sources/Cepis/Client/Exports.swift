// `Transport` and `RetryBudget` are defined once, in CepisHTTP, and shared by both clients.
// Re-exported rather than aliased: with typealiases, a caller whose package enables the
// `MemberImportVisibility` upcoming feature (SE-0444) could name `Transport` but not use
// `.default` or `.urlSession()` without importing CepisHTTP itself, and DocC would document
// the alias without its members. CepisHTTP's public API is exactly these two types (and
// `Transport.Kind`); everything else in it is `package`, so nothing more leaks.
@_exported import CepisHTTP
