"""Language names and codes as pages give them (``sv-SE``, ``SWE``, ``Swedish``, ``svenska``) read as an ISO 639-1
code, the way Nutch's LanguageParser.parseLanguage reads them."""

from __future__ import annotations

import re

# every ISO 639-1 code
ISO_639_1 = frozenset("""
aa ab ae af ak am an ar as av ay az ba be bg bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz ee el en eo es
et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik io is it iu ja jv ka kg ki
kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no
nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw ta te
tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu""".split())

# code: ISO 639-2 codes (bibliographic and terminological), the language's English and own names, and codes and
# names pages use for it (the old code iw; Nutch's aliases sve and sweden)
_NAMES = """
af: afr afrikaans
am: amh amharic
ar: ara arabic
az: aze azerbaijani azərbaycan
be: bel belarusian беларуская
bg: bul bulgarian български
bn: ben bengali bangla বাংলা
br: bre breton brezhoneg
bs: bos bosnian bosanski
ca: cat catalan català catala
cs: cze ces czech čeština cestina
cy: wel cym welsh cymraeg
da: dan danish dansk
de: ger deu german deutsch
el: gre ell greek ελληνικά
en: eng english
eo: epo esperanto
es: spa spanish español espanol castellano
et: est estonian eesti
eu: baq eus basque euskara
fa: per fas persian farsi فارسی
fi: fin finnish suomi
fo: fao faroese føroyskt
fr: fre fra french français francais
fy: fry frisian frysk
ga: gle irish gaeilge
gd: gla gaelic gàidhlig
gl: glg galician galego
gu: guj gujarati
he: heb hebrew iw עברית
hi: hin hindi हिन्दी
hr: hrv croatian hrvatski
ht: hat haitian
hu: hun hungarian magyar
hy: arm hye armenian հայերեն
id: ind indonesian
is: ice isl icelandic íslenska islenska
it: ita italian italiano
ja: jpn japanese 日本語
jv: jav javanese
ka: geo kat georgian ქართული
kk: kaz kazakh қазақ
km: khm khmer
kn: kan kannada
ko: kor korean 한국어
ku: kur kurdish
ky: kir kyrgyz
la: lat latin latina
lb: ltz luxembourgish lëtzebuergesch
lo: lao lao
lt: lit lithuanian lietuvių lietuviu
lv: lav latvian latviešu latviesu
mg: mlg malagasy
mk: mac mkd macedonian македонски
ml: mal malayalam
mn: mon mongolian монгол
mr: mar marathi
ms: may msa malay melayu
mt: mlt maltese malti
my: bur mya burmese
nb: nob bokmål bokmal
ne: nep nepali
nl: dut nld dutch nederlands flemish vlaams
nn: nno nynorsk
no: nor norwegian norsk
oc: oci occitan
pa: pan punjabi
pl: pol polish polski
ps: pus pashto
pt: por portuguese português portugues
qu: que quechua
rm: roh romansh rumantsch
ro: rum ron romanian română romana
ru: rus russian русский
rw: kin kinyarwanda
se: sme sami
si: sin sinhala
sk: slo slk slovak slovenčina slovencina
sl: slv slovenian slovene slovenščina slovenscina
so: som somali
sq: alb sqi albanian shqip
sr: srp serbian српски srpski
sv: swe swedish svenska sve sweden
sw: swa swahili kiswahili
ta: tam tamil
te: tel telugu
th: tha thai ไทย
tl: tgl tagalog filipino fil
tr: tur turkish türkçe turkce
uk: ukr ukrainian українська
ur: urd urdu
uz: uzb uzbek oʻzbek
vi: vie vietnamese
xh: xho xhosa
yi: yid yiddish
yo: yor yoruba
zh: chi zho chinese 中文 汉语 漢語
zu: zul zulu
"""

LANGUAGES: dict[str, str] = {code: code for code in ISO_639_1}
for _line in _NAMES.strip().splitlines():
    _code, _, _names = _line.partition(":")
    LANGUAGES.update({name: _code for name in _names.split()})

_SPLIT = re.compile(r"[,; .()=]")


def parse_language(value: str | None) -> str | None:
    """The ISO 639-1 code of the first language a value names (``"sv-FI"``, ``"EN_US, SV"``, ``"(SCHEME=Z39.53)
    SWE"``, ``"Swedish, svenska"``), or None when it names none."""
    if not value:
        return None
    for token in _SPLIT.split(value):
        code = re.split(r"[-_]", token, maxsplit=1)[0].lower()
        if code in LANGUAGES:
            return LANGUAGES[code]
    return None
