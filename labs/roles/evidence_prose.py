"""The ordinary English a prose knock-out is judged on (`labs.roles.knockout.prose_loss`).

Why not the prose probe's one paragraph: about 60 tokens are too few for a 0.05-nat bar. On the
classroom models, knocking out the previous-token heads moved the loss on it by -0.06 to +0.06 nats,
while on 24 held-out corpus documents (about 6,000 tokens) the same knock-out cost +0.37 to +0.43 and
random heads +0.01 to +0.14. These paragraphs (written for this project, a mix of story, plain
description and instructions; none is in the training corpus) give the knock-out a few hundred tokens of
ordinary text, each paragraph short enough for any model's context.
"""

from __future__ import annotations

EVIDENCE_PROSE = (
    "Once upon a time there was a little girl called Lily. She lived in a small house near the woods "
    "with her mother and her dog. Every morning she walked to school with her friend Tom, and they "
    "talked about the birds, the trees and the big river. The cat sat on the mat and watched them go.",
    "The old man opened the door and looked out at the rain. His garden was full of water, and the "
    "path to the gate had turned to mud. He put on his coat and his hat, took his stick from the corner "
    "and went out to see if the hens were dry. They sat in a row under the roof of the shed.",
    "A river starts as a small stream high in the hills. As it runs down toward the sea, other streams "
    "join it and it grows wider and slower. Towns are often built where a river can be crossed, and many "
    "of the oldest roads in the country follow the valleys that rivers have cut over thousands of years.",
    "To make a cup of tea, first boil some water. Put a tea bag in a cup, pour the hot water over it and "
    "wait for three or four minutes. Then take the bag out, add a little milk if you like it, and stir. "
    "Some people also add sugar or honey, but many think that good tea needs nothing else.",
    "When the children came home from the park, they were tired and hungry. Their father had made soup "
    "and bread for dinner. After they had eaten, the boy read a book about ships while his sister drew a "
    "picture of the horse they had seen in the field. Then it was time to wash and go to bed.",
    "The meeting of the town council began at seven in the evening. The mayor said that the new school "
    "would open in the spring, and that the bridge over the river would be repaired before the winter. "
    "Several people asked questions about the cost, and the members agreed to discuss it again next month.",
)
