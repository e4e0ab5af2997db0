// Its own module so that the CLI's error reporting can know it without loading the import itself.

/** A file that cannot be imported at all (no usable header, unknown format). */
export class ImportFileError extends Error {
  override readonly name = 'ImportFileError';
}
