/** Same union as `InputFormat` of src/input (kept here so the mapping does not depend on the reader). */
export type InputFormat = 'csv' | 'tsv' | 'ndjson';

/** A mapping file compiled into a row mapper (see docs/mapping.md). */
export interface CompiledMapping {
  /** The mapping file's path, as given. */
  readonly path: string;
  /** Hex SHA-256 of the file bytes (part of the job identity). */
  readonly sha256: string;
  /** Optional hints from the mapping's `input:` block. */
  readonly input: { format?: InputFormat; delimiter?: string };
  /** Every CSV column the mapping can read (numbered groups expanded). */
  readonly sourceColumns: readonly string[];
  /**
   * Every source the mapping reads, as a pattern: a column, or an NDJSON path with `[]` for the
   * elements of a list (`drivers[].dob`); `whole` when everything below it is read (`pass:`).
   */
  readonly sourcePaths: readonly { path: string; whole: boolean }[];
  /** Request paths the mapping fills, indexes written `[]` (`application.drivers[].dob`). */
  readonly targetPaths: readonly string[];
  /** Where the run puts the agent id returned by validation (`channel.agent_id` by default). */
  readonly agentIdPath: string;
  /** Request paths still set to `init`'s placeholder ({@link DRAFT_PLACEHOLDER}): a value to decide before a real run. */
  readonly placeholders: readonly string[];
  /**
   * Throws E_MAPPING naming missing columns (with a did-you-mean hint), or when the mapping reads
   * nested NDJSON paths: call it once with the CSV header before any row.
   */
  checkColumns(header: readonly string[]): void;
  /** Maps one record. Never throws for bad data: problems go into errors/warnings. */
  mapRow(record: Record<string, unknown>, rowNumber: number): MappedRow;
  /** Places the agent id returned by validation into the request (default path `channel.agent_id`). */
  setAgentId(request: Record<string, unknown>, agentId: string): void;
}

/** One row after mapping and validation. */
export interface MappedRow {
  /** 1-based data row of the input (header excluded). */
  rowNumber: number;
  /** The QuoteRequest that would be sent (before the agent id is set). */
  request: Record<string, unknown>;
  /** Source of the agent validation call: trimmed, lower-case; null when the row has none. */
  agentEmail: string | null;
  /** The lead's stable identity: `tracking.click_id`, else `channel.channel_lead_id`, else `row-<n>` (configurable). */
  rowKey: string;
  /** Conversion errors and QuoteRequest schema errors: the row must not be sent. */
  errors: RowIssue[];
  /** Unknown enumerated words, value-table misses that fell back: the row can be sent. */
  warnings: RowIssue[];
}

/** A problem of one row, traced to the source columns that fed the request path. */
export interface RowIssue {
  /** Request path, e.g. `application.drivers[1].dob` (or `agent.email`, `row_key`). */
  path: string;
  /** What was expected, e.g. `expected YYYY-MM-DD`. */
  message: string;
  /** Source columns (CSV) or source paths (NDJSON, e.g. `drivers[1].dob`) behind the path. */
  columns: readonly string[];
  /** `column` for CSV columns, `field` for NDJSON paths (only changes the wording). */
  sourceKind?: 'column' | 'field';
  /** The offending value, when there was one. */
  received?: unknown;
  /**
   * The text of the one source column behind `received`, when the mapping's conversion changed it
   * (a phone `555-01` sent as `55501`): what a user finds when searching the file.
   */
  sourceText?: string;
}

/** What `init` writes where only the user can say the value (the channel id): never to be sent to a partner. */
export const DRAFT_PLACEHOLDER = 'CHANGE-ME';
