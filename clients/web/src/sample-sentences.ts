/**
 * The sentence the page offers to translate: one in the loaded model's source language, so that a German→English
 * model is first shown German. The text box keeps what the user typed; only a sample (or an empty box) is replaced.
 */
const SAMPLES: Readonly<Record<string, string>> = {
  en: 'A man runs.',
  de: 'Ein Mann läuft.',
  fr: 'Un homme court.',
  cs: 'Muž běží.',
};

const OFFERED = new Set(Object.values(SAMPLES));

/** What the text box should hold once a model reading `lang` is loaded, given what it holds now. */
export function sampleFor(lang: string | undefined, current: string): string {
  const untouched = current.trim() === '' || OFFERED.has(current.trim());
  const sample = lang === undefined ? undefined : SAMPLES[lang.toLowerCase()];
  return untouched && sample !== undefined ? sample : current;
}
