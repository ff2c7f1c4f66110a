"""How people mark a correction, as patterns: the old and the new value in one sentence
("a Prius, not a Corolla", "switched from vim to helix"), the old value alone ("not German
anymore", "I left Deloitte"), the new value alone after a cue ("switched to helix", "these
days it's rooibos"), and the cues themselves (`CORRECTIVE`: the user says an earlier
statement was wrong; `REPLACING`: a new value takes an old one's place; `CUE`: either, or
something changed). `corrections.find_changes` reads turns with them.
"""

from __future__ import annotations

import re

__all__ = ["ACQUIRED", "BOTH", "CORRECTIVE", "CUE", "NEW", "OLD", "REPLACING"]

# a value: up to the next punctuation (not a separator inside a number or a hyphenated word)
_V = r"(?P<{}>(?:[^,.;:!?()\n–—]|(?<=\d)[,.](?=\d)|(?<=\w)-(?=\w))+?)"
_END = (r"(?=\s*(?:[,.](?!\d)|[;:!?()\n–—]|\s-\s|$)|\s(?:now|these\s+days|nowadays|anymore|"
        r"any\s+more|instead|and|but|because|bc|cuz|cause|since|so|as|which|after|before|last|this|"
        r"next|for\s+good|"
        r"though|in|on|at|by|from|with|over|from\s+here|going\s+forward|ago|a\s+few|"
        r"for\s+(?:replies|answers|recipes|code|everything|now))\b)")


_SHORT = r"(?P<{}>[\w£$€@'+.:/-]+(?:\s+[\w£$€@'+.:/-]+){{0,3}})"  # at most four words


def _p(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern.format(
        old=_V.format("old"), new=_V.format("new"), short_old=_SHORT.format("old"),
        short_new=_SHORT.format("new")), re.I)


_ART = r"(?:(?:a|an|the|my|our|his|her|their)\s+)?"
_MAKE_THAT = (r"(?<!\bto\s)(?<!help\s)(?<!'ll\s)(?<!can\s)(?<!will\s)(?<!and\s)make\s+that"
              r"(?!\s+happen\b)")  # "make that kilometres"; not "help make that happen"
BOTH = tuple(_p(p.replace("ART", _ART)) for p in (  # the old and the new value in one sentence
    r"\b(?:switched|moved|migrated|changed|went|upgraded|downgraded|converted|transitioned|"
    r"swapped|shifted|jumped|bumped)\b(?:\s+[\w'-]+){{0,4}}?\s+from\s+ART{old}\s+(?:to|for)\s+"
    r"ART{new}" + _END,
    r"\b(?:swapped|traded|exchanged)\s+ART{old}\s+for\s+ART{new}" + _END,
    r"\breplaced\s+ART{old}\s+with\s+ART{new}" + _END,
    r"\bnot\s+ART{old},?\s+but\s+ART{new}" + _END,
    r"\bi\s+(?:said|typed|wrote|put|told\s+you)\s+ART{short_old}\s+but\s+(?:i\s+meant\s+|"
    r"(?:it'?s|it\s+is|it\s+was|they'?re)\s+(?:actually\s+)?|actually\s+)?ART{short_new}" + _END,
    r"\b(?:meant|is|are|it's|its|it\s+is|was|use|" + _MAKE_THAT + r"|prefer|to|in|at)\s+ART"
    r"{short_new},\s+not\s+(?:in\s+|on\s+|at\s+)?ART{short_old}" + _END,
    r"(?:^|\s){short_new}\s+(?:instead\s+of|rather\s+than)\s+ART{old}" + _END,
    r"\bnot\s+(?:\w+\s+){{0,3}}?ART{short_old}\s*[,;—–]\s+(?:it'?s|it\s+is|they'?re|that'?s)\s+"
    r"(?:actually\s+)?ART{short_new}" + _END,
    r"^\W*(?:(?:no|nope|oops|sorry)\W+)*not\s+ART{short_old}\s*[,;:]?\s*(?:(?:sorry|oops|"
    # "not Ruby, sorry — Elixir"
    r"my\s+bad|i\s+mean)\s*)?[,;:—–-]+\s*ART{short_new}(?=\s*(?:[.!;]|$))",
))
OLD = tuple(_p(p.replace("ART", _ART)) for p in (  # the old value only
    r"(?:\bnot|n['’]t|\bno\s+longer)\s+(?:\w+\s+){{0,2}}(?:using\s+|on\s+|in\s+|at\s+|"
    r"with\s+|doing\s+)?ART{old}\s+(?:any\s?more|any\s+longer)\b",
    r"\bno\s+longer\s+(?:using\s+|on\s+|in\s+|at\s+|with\s+)?ART{old}" + _END,
    r"^\W*(?:(?:no|nope|ugh|sorry|oops|wait|actually)\W+)*not\s+ART{short_old}\s*(?:[,;:—–]|\s-\s)",
    r"\b(?:gone\s+off|(?:migrated|moved|switched|came|got)\s+off(?:\s+of)?|"
    r"(?:pulled|took|taken)\s+(?:\w+\s+)?out\s+of|left|quit|ditched|dropped|stopped\s+using|moved\s+(?:away\s+)?"
    r"(?:from|out\s+of)|gave\s+up(?:\s+on)?|got\s+rid\s+of|cancell?ed|sold|closed|"
    r"deferred|forget|ignore|scrap|stop(?:\s+with|\s+using|\s+doing|\s+giving\s+me)?|"
    r"no\s+more|drop|lose|ditch|ripped\s+out)\s+ART{old}" + _END,
    r"^\W*{short_old}\s+(?:shut\s+down|closed|is\s+gone|went\s+bust|is\s+dead)\b",
    r"\b{short_old}\s+(?:is|was)\s+(?:wrong|outdated|out\s+of\s+date|old\s+news|no\s+more|"
    r"dead)\b",
))
NEW = tuple(_p(p.replace("ART", _ART)) for p in (  # the new value only, after a cue
    r"\b(?:switch(?:ed|ing)?|move[ds]?|moving|migrated|migration|change[ds]?|changing|upgraded|"
    r"downgraded|bumped|"
    r"transferred|relocated|promoted|renamed|converted|shifted|pushed|postponed|extended|"
    r"rescheduled|raised|lowered|increased|reduced|updated|revised|cut\s+down|down|up)\b"
    r"(?:\s+[\w'-]+){{0,6}}?\s+(?:to|into|onto)\s+ART{new}" + _END,
    r"\brenamed\s+(?:(?:the|our|my|his|her|their|it)\s+)?(?:[\w-]+\s+)?"
    r"(?P<new>(?-i:[A-Z][\w-]*))",
    r"\b(?:replaced|swapped)\s+(?:it|him|her|them|that)\s+(?:with|for)\s+ART{new}" + _END,
    r"\bnew\s+[\w-]+(?:\s+[\w-]+)?(?:\s+(?:is|are|will\s+be)\s+|,\s+)ART{new}" + _END,
    r"\b(?:i\s+meant|" + _MAKE_THAT + r"|(?:it'?s|it\s+is)\s+actually|correction\s*[:—–-])\s*"
    r"ART{new}" + _END,
    r"\b(?:it'?s|its|it\s+is|they'?re|that'?s)\s+(?:mostly\s+|now\s+|actually\s+)?"
    r"ART{new}\s+(?:these\s+days|nowadays|now)\b",
    r"\b(?:these\s+days|nowadays|now|from\s+\w+(?:\s+\w+)?)\s*,?\s+(?:it'?s|its|it\s+is|"
    r"it\s+will\s+be|i\s+use|i'?m\s+on|we\s+use|we'?re\s+on)\s+(?:mostly\s+)?ART{new}"
    + _END,
    r"\b(?:i'?m|we'?re|i\s+am|we\s+are)\s+(?:at|on|in|with|using)\s+{new}\s+now\b",
    r"\b(?:wrong\s+\w+|typo|mistake|misspoke|mixed\s+(?:it|them)\s+up|my\s+bad)\b[^.!?]*?"
    r"\b(?:it'?s|it\s+is|is|they'?re|are)\s+(?:actually\s+)?ART{new}" + _END,
    r"\b(?:qualified\s+as|promoted\s+to|became)\s+ART{new}" + _END,
))
ACQUIRED = tuple(_p(p.replace("ART", _ART)) for p in (  # a new value, when the turn has a cue
    r"\b(?:(?:it'?s|it\s+is)\s+(?:going\s+to\s+be|gonna\s+be)|"
    r"entered|joined|picked|chose|went\s+with|settled\s+on|signed\s+up\s+(?:for|with)|"
    r"got\s+a\s+place\s+(?:at|on|in)|(?:bought|got|picked\s+up)(?=\s+(?:a|an|the|my|our)\s)|"
    r"opened\s+(?:\w+\s+)?(?:with|at)|"
    r"started\s+(?:\w+\s+){{0,5}}?at|taking\s+\w+\s+to|made\s+me(?=\s+(?:a|an|the|head|"
    r"lead|chief|manager|director|senior|principal)\b)|reporting\s+to)\s+"
    r"ART{new}" + _END,
))
CORRECTIVE = re.compile(  # the user says an earlier statement was wrong
    r"^\W*(?:(?:hmm+|um+|uh+|eh|ah|oh|ok|okay|so|well|hold\s+on)\W+)?(?:actually|correction|"
    r"scratch\s+that|sorry|oops|whoops|wait|no\s+wait|my\s+bad|"
    r"ugh\W+no|no,)\b|\b(?:i\s+meant|" + _MAKE_THAT + r"|typo|mistake|misspoke|"
    r"mixed\s+(?:it|them)\s+up|"
    r"wrong\s+(?:number|name|date|day|time|address|email|one|person|place|year|month)|"
    r"(?:got|had)\s+(?:it|that)\s+wrong|was\s+wrong|correction|scratch\s+that|"
    r"not\s+\w+\s*[,—–]\s)\b", re.I)
REPLACING = re.compile(  # the new value takes the place of an old one
    r"\b(?:switch(?:ed)?\s+(?:\w+\s+){0,4}?to|migrat(?:ed|ion)|replaced|renamed|"
    r"instead(?!\s+of\b)|"
    r"changed\s+my\s+mind|on\s+second\s+thought|change\s+of\s+plans?|"
    r"went\s+with|moved\s+(?:everything|it|them|over|all)|fully\s+on|outdated|no\s+longer|"
    r"any\s?more|changed\s+(?:it\s+)?to|swapped|ditched|dropped|got\s+rid\s+of)\b", re.I)
CUE = re.compile(  # something changed, or the user corrects themselves, or news came in
    CORRECTIVE.pattern + "|" + REPLACING.pattern + r"|\bupdate(?=\s*[:–—-])|"
    r"\b(?:e-?mailed|texted|messaged|called|rang|confirmed|announced|wrote|told\s+(?:me|us))"
    r"(?=\s*[:–—])|\b(?:not\s+anymore|"
    r"no\s+longer|these\s+days|nowadays|moved\s+(?:\w+\s+){0,3}?(?:to|into|onto)|bumped|revised|"
    r"pushed\s+(?:back|to)|postponed|rescheduled|deferred|upgraded|downgraded|promoted|"
    r"changed\s+(?:to|it|the)|got\s+moved|was\s+moved|been\s+moved)\b", re.I)
