/** Length in Unicode code points: the "characters" of the spec's limits (an emoji is one, not two). */
export function charCount(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/**
 * True when the text holds a UTF-16 surrogate without its pair: not Unicode text. UTF-8 cannot encode it, so encoding
 * would turn it into U+FFFD and two different briefs would hash alike; it is refused wherever text is hashed or stored.
 */
export function hasLoneSurrogate(text: string): boolean {
  // With the u flag a well-formed pair is one code point, so only a lone half matches.
  return /\p{Surrogate}/u.test(text);
}

/**
 * The text with every URL cut to its scheme and host (`https://rpc.example.com/[redacted]`): a key in a URL's user
 * part, path or query, as RPC providers put them, never shows. For error details written to logs.
 */
export function redactUrls(text: string): string {
  return text.replace(
    /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#"'<>@]*@)?([^\s/?#"'<>@]*)([^\s"'<>]*)/gi,
    (_match, scheme: string, _user: string | undefined, host: string, rest: string) => `${scheme}${host}${rest ? "/[redacted]" : ""}`,
  );
}
