/**
 * The sacreBLEU release whose BLEU and chrF frost reproduces, named in every signature frost prints
 * (`…|version:2.6.0`) so a score can be cited next to sacreBLEU's. The test vectors under
 * test/fixtures/sacrebleu/ were made with this release; change both together.
 */
export const SACREBLEU_VERSION = '2.6.0';
